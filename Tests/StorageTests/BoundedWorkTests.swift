import Domain
import Foundation
import Postgres
import Storage
import XCTest

/// Issue 21, item 5: a request's database work is linear in what it carries. A forged Xcode receipt can list
/// thousands of distinct purchases for one user; recording them must not re-read the user's other holdings once per
/// record (the webhook refresh of schema/0012 did, on every binding: quadratic).
final class BoundedWorkTests: XCTestCase {
    private var s: TestStores!

    override func setUpWithError() throws {
        s = try TestStores.make(label: "boundedwork", poolSize: 1)
    }

    override func tearDown() {
        s?.close()
    }

    /// `count` distinct purchases (each its own original transaction), as a forged receipt lists them.
    private func distinct(_ prefix: String, count: Int) -> [TransactionFacts] {
        (0..<count).map { i in
            var t = Fixtures.monthly("\(prefix)\(i)", original: "\(prefix)\(i)", start: 0, signed: 1,
                                     environment: .xcode)
            t.appAccountToken = nil
            t.payloadJSON = "{}"
            return t
        }
    }

    /// Rows PostgreSQL read from `subscriptions` and `purchases` so far (sequential and index fetches), flushed
    /// from this session's pending statistics first (the pool has one connection: the session that wrote).
    private func rowsRead() throws -> Int {
        _ = try s.rows("SELECT pg_stat_force_next_flush()")
        // The flush happens when the session goes idle after that statement; a new transaction sees it.
        let rows = try s.rows("""
            SELECT (sum(COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0)))::int8 AS n
            FROM pg_stat_user_tables WHERE relname IN ('subscriptions', 'purchases')
            """)
        return Int(try XCTUnwrap(rows.first).decode("n", as: Int64.self))
    }

    /// Records `count` distinct purchases for one user in one call; the rows read and the time it took.
    private func record(_ prefix: String, count: Int, project: Project) throws -> (read: Int, ms: Double) {
        let before = try rowsRead()
        let started = Date()
        let recorded = try s.purchases.recordTransactions(
            distinct(prefix, count: count), source: .receipt, userId: "user-\(prefix)", deviceId: nil,
            project: project, now: Fixtures.at(10))
        let ms = Date().timeIntervalSince(started) * 1000
        XCTAssertEqual(recorded.count, count)
        let read = try rowsRead() - before
        print("recorded \(count) distinct purchases of one user in one call: \(read) rows read, \(String(format: "%.0f", ms)) ms")
        return (read, ms)
    }

    func testRecordingDistinctPurchasesReadsRowsLinearInTheirCount() throws {
        let project = try s.makeProject()
        _ = try s.projects.setProduct(projectId: project.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]),
                                      now: Fixtures.t0)
        // A server's tables hold other tenants' rows and have statistics (autovacuum): the plans of a warm database.
        let other = try s.makeProject(2)
        _ = try record("other", count: 2000, project: other)
        _ = try s.rows("ANALYZE")
        _ = try record("warm", count: 2, project: project)
        let small = try record("s", count: 200, project: project)
        let large = try record("l", count: 1600, project: project)
        print("""
            distinct purchases of one user in one call: 200 → \(small.read) rows read, \
            \(String(format: "%.0f", small.ms)) ms; 1600 → \(large.read) rows read, \(String(format: "%.0f", large.ms)) ms
            """)
        // Linear: a few reads per record whatever the count (quadratic: hundreds per record at 1600).
        XCTAssertLessThan(large.read, 1600 * 12, "rows read per record must not grow with the record count")
        XCTAssertLessThan(Double(large.read) / 1600, Double(small.read) / 200 * 2 + 4)
        XCTAssertEqual(try s.count("SELECT count(*) FROM subscriptions WHERE project_id = \(project.id)"), 1802)
    }
}
