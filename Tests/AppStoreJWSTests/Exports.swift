// TestPKI, the test paths and SeededGenerator live in TestSupport, shared with the other test targets.
@_exported import TestSupport
