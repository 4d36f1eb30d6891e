// TestClient, BouncerProcess, startLiveServer and the test paths live in TestSupport, shared with the other test
// targets; this target sees them without an import in each file.
@_exported import TestSupport
