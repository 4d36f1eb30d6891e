import Domain
import Foundation
import Postgres
import Storage
import XCTest

/// What each write costs the database, counted on the one pooled connection (`Connection.roundTrips`).
///
/// Every statement shape is run once first, so the counts are those of a warm connection (a statement's first use
/// on a session costs one more round trip: its PQprepare). Set `BOUNCER_BENCH=1` to also print the PostgreSQL
/// backend's CPU per call (from `/proc/<backend pid>/stat`, over 500 calls of each kind).
final class RoundTripTests: XCTestCase {
    private var s: TestStores!
    private var project: Project!

    override func setUpWithError() throws {
        s = try TestStores.make(label: "roundtrips", poolSize: 1)
        project = try s.makeProject(policy: .transfer)
        _ = try s.projects.setProduct(
            projectId: project.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]), now: Fixtures.t0)
    }

    override func tearDown() {
        s?.close()
    }

    private func roundTrips(_ body: () throws -> Void) throws -> Int {
        let before = try s.pool.withConnection { $0.roundTrips }
        try body()
        return try s.pool.withConnection { $0.roundTrips } - before
    }

    @discardableResult
    private func post(_ id: String, original: String, start: Double, user: String) throws -> RecordedTransaction {
        try s.purchases.recordTransaction(
            Fixtures.monthly(id, original: original, start: start), userId: user, deviceId: nil, project: project,
            now: Fixtures.t0)
    }

    /// The four shapes of `POST /v1/receipts` (project lookup aside) each cost one round trip.
    func testEveryReceiptShapeIsOneRoundTrip() throws {
        // Warm-up: every statement shape once.
        try post("w1", original: "w1", start: 0, user: "uw")
        try post("w2", original: "w1", start: 30, user: "uw")
        try post("w2", original: "w1", start: 30, user: "ux")

        let newPurchase = try roundTrips { try post("a1", original: "a1", start: 0, user: "ua") }
        let repeated = try roundTrips { try post("a1", original: "a1", start: 0, user: "ua") }
        let renewal = try roundTrips { try post("a2", original: "a1", start: 30, user: "ua") }
        let transfer = try roundTrips { try post("a2", original: "a1", start: 30, user: "ub") }
        print("round trips: new purchase \(newPurchase), repeat post \(repeated), renewal \(renewal), "
            + "transfer \(transfer)")
        XCTAssertEqual(newPurchase, 1)
        XCTAssertEqual(repeated, 1)
        XCTAssertEqual(renewal, 1)
        XCTAssertEqual(transfer, 1)
        // And they did what they say (the full rules are StorageTests' and the oracle test's).
        let owners = try s.rows("""
            SELECT user_id FROM subscriptions WHERE project_id = \(project.id) AND original_transaction_id = 'a1'
              AND revoked_at IS NULL
            """).map { try $0.decode("user_id", as: String.self) }
        XCTAssertEqual(owners, ["ub"])
    }

    /// A notification carrying a transaction and renewal info, and its redelivery: one round trip each.
    func testNotificationRoundTrips() throws {
        let notifications = PostgresNotificationStore(pool: s.pool)
        func notification(_ n: Int, _ id: String, start: Double) -> NotificationFacts {
            let transaction = Fixtures.monthly(id, original: "n1", start: start)
            return NotificationFacts(
                notificationUUID: UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n)) ?? UUID(),
                type: "DID_RENEW", signedDate: transaction.signedDate, environment: .production,
                transaction: transaction,
                renewal: Fixtures.renewal(original: "n1", signed: start),
                payloadJSON: #"{"notificationType":"DID_RENEW"}"#)
        }
        _ = try notifications.recordNotification(notification(1, "n1", start: 0), project: project, now: Fixtures.t0)
        let renewed = try roundTrips {
            _ = try notifications.recordNotification(notification(2, "n2", start: 30), project: project, now: Fixtures.t0)
        }
        let duplicate = try roundTrips {
            _ = try notifications.recordNotification(notification(2, "n2", start: 30), project: project, now: Fixtures.t0)
        }
        print("round trips: notification \(renewed), redelivery \(duplicate)")
        XCTAssertEqual(renewed, 1)
        XCTAssertEqual(duplicate, 1)
    }

    /// The hot reads run prepared: after a warm-up, neither the project lookup nor GET's query prepares again.
    func testHotReadsArePrepared() throws {
        try post("r1", original: "r1", start: 0, user: "ur")
        _ = try s.projects.project(publicKey: Fixtures.publicKey(1), at: Fixtures.t0)
        _ = try s.purchases.ownedPurchases(userId: "ur", project: project)
        let prepared = try s.pool.withConnection { $0.preparedStatementCount }
        let lookup = try roundTrips { _ = try s.projects.project(publicKey: Fixtures.publicKey(1), at: Fixtures.t0) }
        let read = try roundTrips { _ = try s.purchases.ownedPurchases(userId: "ur", project: project) }
        XCTAssertEqual(lookup, 1)
        XCTAssertEqual(read, 1)
        XCTAssertEqual(try s.pool.withConnection { $0.preparedStatementCount }, prepared)
    }

    /// PostgreSQL backend CPU per call, printed (a measurement, not an assertion). With `BOUNCER_BENCH_PGSS=1`
    /// (a cluster with `shared_preload_libraries = 'pg_stat_statements'` behind `BOUNCER_TEST_DATABASE_URL`), also
    /// the top-level statements per call and their execution time from `pg_stat_statements`.
    func testBackendCPUPerCall() throws {
        guard ProcessInfo.processInfo.environment["BOUNCER_BENCH"] == "1" else {
            throw XCTSkip("set BOUNCER_BENCH=1 to run")
        }
        let statements = ProcessInfo.processInfo.environment["BOUNCER_BENCH_PGSS"] == "1"
        let pid = try s.pool.withConnection { connection in
            if statements { try connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements") }
            return try XCTUnwrap(connection.query("SELECT pg_backend_pid()").first).decode(at: 0, as: Int.self)
        }
        func cpu() throws -> Double {
            let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            // Fields after the parenthesised command: utime and stime are the 12th and 13th (clock ticks of 10 ms).
            let fields = try XCTUnwrap(stat.split(separator: ")").last).split(separator: " ")
            return (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        }
        let n = 1_000
        func measure(_ label: String, _ body: (Int) throws -> Void) throws {
            if statements { try s.pool.withConnection { try $0.execute("SELECT pg_stat_statements_reset()") } }
            let before = try cpu()
            for i in 0..<n { try body(i) }
            let ticks = try cpu() - before
            var line = "\(label): backend CPU \(Int(ticks * 10_000 / Double(n))) µs/call"
            if statements {
                let row = try XCTUnwrap(s.pool.withConnection { try $0.query("""
                    SELECT sum(calls)::float8 AS calls, sum(total_exec_time)::float8 AS ms FROM pg_stat_statements
                    WHERE toplevel AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                      AND query NOT LIKE '%pg_stat_statements%'
                    """) }.first)
                let calls = try row.decode("calls", as: Double.self), ms = try row.decode("ms", as: Double.self)
                line += ", \(calls / Double(n)) statements/call, pg_stat_statements exec \(Int(ms * 1000 / Double(n))) µs/call"
            }
            print(line)
        }
        try measure("new purchase") { i in try post("c\(i)", original: "c\(i)", start: 0, user: "uc\(i)") }
        try measure("repeat post") { i in try post("c\(i)", original: "c\(i)", start: 0, user: "uc\(i)") }
        try measure("renewal") { i in try post("d\(i)", original: "c\(i)", start: 30, user: "uc\(i)") }
        try measure("transfer") { i in try post("d\(i)", original: "c\(i)", start: 30, user: "ue\(i)") }
        let notifications = PostgresNotificationStore(pool: s.pool)
        try measure("notification (transaction + renewal info)") { i in
            let transaction = Fixtures.monthly("e\(i)", original: "c\(i)", start: 60)
            _ = try notifications.recordNotification(
                NotificationFacts(
                    notificationUUID: UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", i)) ?? UUID(),
                    type: "DID_RENEW", signedDate: transaction.signedDate, environment: .production,
                    transaction: transaction, renewal: Fixtures.renewal(original: "c\(i)", signed: 60),
                    payloadJSON: #"{"notificationType":"DID_RENEW"}"#),
                project: project, now: Fixtures.t0)
        }
    }
}
