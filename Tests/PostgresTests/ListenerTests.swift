import Foundation
import Postgres
import Synchronization
import TestSupport
import XCTest

/// `NotificationListener` against a real server: delivery, reconnect after its session is killed, prompt shutdown.
final class ListenerTests: XCTestCase {
    final class Events: Sendable {
        let log = Mutex<[String]>([])
        func append(_ event: String) { log.withLock { $0.append(event) } }
        var all: [String] { log.withLock { $0 } }
    }

    private func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return try condition()
    }

    func testDeliversReconnectsAfterItsSessionIsKilledAndShutsDownPromptly() throws {
        var settings = try TestDatabase.create(label: "listener")
        let pool = ConnectionPool(settings: settings, configuration: .init(size: 1))
        defer { pool.shutdown() }
        let name = "listener-test-\(UInt32.random(in: 0...UInt32.max))"
        settings.applicationName = name
        let events = Events()
        let listener = NotificationListener(
            settings: settings, channels: ["cache_test", "other"],
            handlers: .init(
                connected: { events.append("connected") },
                disconnected: { _ in events.append("disconnected") },
                notification: { channel, payload in events.append("\(channel): \(payload)") }))
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            listener.run()
            done.signal()
        }
        XCTAssertTrue(eventually { events.all == ["connected"] })

        try pool.withConnection { try $0.execute("SELECT pg_notify('cache_test', 'one'), pg_notify('other', 'two')") }
        try pool.withConnection { try $0.execute("SELECT pg_notify('unheard', 'x')") }
        try pool.withConnection { try $0.execute("SELECT pg_notify('cache_test', 'three')") }
        XCTAssertTrue(eventually { events.all.count == 4 }, "\(events.all)")
        XCTAssertEqual(events.all, ["connected", "cache_test: one", "other: two", "cache_test: three"])

        let killed = try pool.withConnection {
            try $0.query("SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = \(name)")
                .map { try $0.decode("ok", as: Bool.self) }
        }
        XCTAssertEqual(killed, [true])
        XCTAssertTrue(eventually { events.all.suffix(2) == ["disconnected", "connected"] }, "\(events.all)")
        try pool.withConnection { try $0.execute("SELECT pg_notify('cache_test', 'after')") }
        XCTAssertTrue(eventually { events.all.last == "cache_test: after" }, "\(events.all)")

        listener.shutdown()
        XCTAssertEqual(done.wait(timeout: .now() + 5), .success, "run() returns without waiting for a timeout")
        let sessions = try pool.withConnection {
            try $0.query("SELECT count(*)::int8 AS n FROM pg_stat_activity WHERE application_name = \(name)")
                .first?.decode("n", as: Int64.self)
        }
        XCTAssertTrue(try eventually {
            try pool.withConnection {
                try $0.query("SELECT count(*)::int8 AS n FROM pg_stat_activity WHERE application_name = \(name)")
                    .first?.decode("n", as: Int64.self) == 0
            }
        }, "the session closed with run() (\(sessions ?? -1) left)")
    }
}
