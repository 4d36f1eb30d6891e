import Foundation
import JSON
import Postgres
import Synchronization
import XCTest

/// SIGTERM on `bouncer serve` with a request in flight: the server stops accepting, the request completes with
/// its normal answer, every service stops (in reverse start order, one log line each) and the process exits 0.
final class ShutdownE2ETests: XCTestCase {
    /// The services `bouncer serve` starts with scheduled reconciliation and webhooks on, in start order.
    static let services = ["readiness-monitor", "caches", "webhook-deriver", "reconcile-scheduler",
                           "webhook-dispatcher", "consumption-responder"]

    func testSIGTERMDrainsTheRequestInFlightThenStopsEveryService() throws {
        let (db, server, api) = try ownServer(label: "shutdown", overrides: [
            "BOUNCER_SHUTDOWN_GRACE_SECONDS": "30", "BOUNCER_RECONCILE_INTERVAL_SECONDS": "86400",
            "BOUNCER_DB_STATEMENT_TIMEOUT_SECONDS": "60",
        ])
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        let jws = try payload.mint()

        // The receipt's statement waits on a lock this test holds: a slow request, released at will.
        let locker = try Connection(settings: db.settings)
        try locker.executeScript(unsafeSQL: "BEGIN; LOCK TABLE purchases IN ACCESS EXCLUSIVE MODE")
        let answer = Mutex<Result<HTTPResponse, any Error>?>(nil)
        let posted = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let result = Result { try api.postReceipt(tenant.publicKey, jws, user: "draining") }
            answer.withLock { $0 = result }
            posted.signal()
        }
        XCTAssertTrue(try E2E.eventually {
            let rows = try db.query("""
                SELECT count(*)::int8 AS n FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
                """)
            return try (rows.first?.decode("n", as: Int64.self) ?? 0) > 0
        }, "the receipt's statement was expected to wait on the lock")

        kill(server.process.processIdentifier, SIGTERM)
        XCTAssertTrue(E2E.eventually { server.stderr.contains(#""phase":"draining""#) }, server.stderr)
        XCTAssertTrue(server.process.isRunning, "the server waits for the request in flight")
        try locker.executeScript(unsafeSQL: "ROLLBACK")

        XCTAssertEqual(posted.wait(timeout: .now() + 60), .success, "the request in flight was expected to finish")
        let response = try XCTUnwrap(answer.withLock { $0 }).get()
        XCTAssertEqual(response.status, 201, response.description + "\n" + server.stderr)
        XCTAssertEqual(try response.json(), expectedReceipt(payload, entitlements: ["pro"], status: "active"))

        let status = server.stop(timeout: 60)
        let log = server.stderr
        XCTAssertEqual(status, 0, "exit status after SIGTERM; stderr:\n\(log)")
        var positions: [String.Index] = []
        for name in Self.services {
            let line = #"{"event":"service","service":"\#(name)","state":"stopped"}"#
            guard let range = log.range(of: line) else {
                XCTFail("no stop line for \(name):\n\(log)")
                continue
            }
            positions.append(range.lowerBound)
        }
        XCTAssertEqual(positions, positions.sorted().reversed(), "services stop in reverse start order:\n\(log)")
        let done = try XCTUnwrap(log.range(of: #""phase":"done""#), log)
        XCTAssertTrue(positions.allSatisfy { $0 > done.lowerBound }, "services stop after the drain:\n\(log)")
        try? FileManager.default.removeItem(atPath: server.stderrPath)
    }
}
