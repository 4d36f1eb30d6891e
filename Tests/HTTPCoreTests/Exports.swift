// TestClient, startLiveServer and the TLS test helpers live in TestSupport, shared with the other test targets; this
// target sees them without an import in each file. The tests of the built `bouncer` process are in EndToEndTests.
@_exported import TestSupport
