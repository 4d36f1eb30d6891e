import Synchronization
import XCTest

/// A test class whose tests share one fake Apple and one `bouncer serve` wired to it (`AppleConnectedBouncer`), made
/// on first use and stopped after the class; after each test the fake forgets the failures a test asked of it.
/// Subclasses say how to make theirs (`connect()`: the database's label and their variables); every test creates its
/// own projects, so tests never see each other's rows.
class AppleConnectedTestCase: XCTestCase {
    /// The class's fake Apple and server; called on first use.
    class func connect() throws -> AppleConnectedBouncer { try AppleConnectedBouncer(label: "apple") }

    /// One fixture per subclass: a class's `tearDown` stops its own only.
    private static let fixtures = Mutex<[ObjectIdentifier: ClassFixture<AppleConnectedBouncer>]>([:])

    /// The class's fixture (made, not started, on first use).
    class var fixture: ClassFixture<AppleConnectedBouncer> {
        let connect: @Sendable () throws -> AppleConnectedBouncer = { try self.connect() }
        return fixtures.withLock { fixtures in
            if let fixture = fixtures[ObjectIdentifier(self)] { return fixture }
            let fixture = ClassFixture(connect)
            fixtures[ObjectIdentifier(self)] = fixture
            return fixture
        }
    }

    override class func tearDown() {
        fixtures.withLock { $0.removeValue(forKey: ObjectIdentifier(self)) }?.take()?.stop()
        super.tearDown()
    }

    override func tearDown() {
        try? Self.fixture.get().apple.clearFailures()
        super.tearDown()
    }

    var apple: FakeAppleServer { get throws { try Self.fixture.get().apple } }
    var server: BouncerProcess { get throws { try Self.fixture.get().server } }
    var db: E2EDatabase { get throws { try Self.fixture.get().db } }
    var api: API { get throws { try Self.fixture.get().api } }
}
