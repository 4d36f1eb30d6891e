// The real-process harness (BouncerProcess, CLIRun), the HTTP clients and the test PKI live in TestSupport, shared
// with the other test targets; this target sees them without an import in each file.
@_exported import TestSupport

/// The suite's historical name for the shared test paths.
typealias E2EPaths = TestPaths
