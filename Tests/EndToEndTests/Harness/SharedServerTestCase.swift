import Synchronization
import TestSupport
import XCTest

/// A test class whose tests share one `bouncer serve` on a fresh database (`SharedServer`), started on first use and
/// stopped after the class. Subclasses name the database (`serverLabel`) and may add variables (`serverOverrides`);
/// every test creates its own projects, so tests never see each other's rows.
class SharedServerTestCase: XCTestCase {
    /// The database's label (`e2e_<label>_…`).
    class var serverLabel: String { "shared" }
    /// Variables beyond the test defaults of `BouncerProcess.environment` (nil removes one).
    class var serverOverrides: [String: String?] { [:] }

    /// One server per subclass: a class's `tearDown` stops its own only.
    private static let servers = Mutex<[ObjectIdentifier: SharedServer]>([:])

    /// The class's shared server (made, not started, on first use).
    class var shared: SharedServer {
        servers.withLock { servers in
            if let server = servers[ObjectIdentifier(self)] { return server }
            let server = SharedServer(label: serverLabel, overrides: serverOverrides)
            servers[ObjectIdentifier(self)] = server
            return server
        }
    }

    override class func tearDown() {
        servers.withLock { $0.removeValue(forKey: ObjectIdentifier(self)) }?.stop()
        super.tearDown()
    }

    var server: BouncerProcess { get throws { try Self.shared.get().server } }
    var db: E2EDatabase { get throws { try Self.shared.get().db } }
    var api: API { get throws { API(client: try server.client) } }

    /// `bouncer ARGUMENTS` against the shared server's database.
    func cli(_ arguments: [String]) throws -> CLIRun {
        var env = try server.environment
        env["BOUNCER_PORT"] = nil
        return try CLIRun.run(arguments, environment: env)
    }
}
