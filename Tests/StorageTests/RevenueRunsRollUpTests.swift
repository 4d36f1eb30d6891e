import Domain
import Foundation
import Postgres
import Storage
import XCTest

/// The charts' runs of paid service (schema/0078) as the deriver rolls them up (`bouncer_revenue_roll_up` →
/// `bouncer_revenue_runs_sync`, issue 22): a renewal appended after a purchase's last run is rolled up from that run
/// alone, so it costs the same whatever the purchase's history; an earlier period's change (a refund, a transaction
/// older than the last run) recomputes the purchase from all of its rows. Either way the result equals a rebuild.
final class RevenueRunsRollUpTests: XCTestCase {
    /// Period `i` of purchase `original`, 30 days from day `start`, priced (a paid period); `revokedAt` a full refund.
    private func period(_ original: String, _ i: Int, start: Double, signed: Double? = nil,
                        revokedAt: Double? = nil) -> TransactionFacts {
        Fixtures.monthly("\(original)-\(i)", original: original, start: start, signed: signed, revokedAt: revokedAt,
                         price: 9990)
    }

    /// `n` periods of `original`: blocks of five back to back, 40 days between blocks (one run per block).
    private func history(_ original: String, _ n: Int) -> [TransactionFacts] {
        (0..<n).map { period(original, $0, start: start(of: $0)) }
    }

    private func start(of i: Int) -> Double { Double(i * 30 + (i / 5) * 40) }

    private func derive(_ s: TestStores, _ project: Project) throws {
        let store = PostgresWebhookStore(pool: s.pool)
        while try store.deriveChanges(projectId: project.id, limit: 500) > 0 {}
    }

    /// The project's revenue rows, day rows, runs and run days as text.
    private func rollUps(_ s: TestStores, _ project: Project) throws -> [String] {
        try s.rows("""
            SELECT 't ' || v::text AS r FROM revenue_transactions v WHERE v.project_id = \(project.id)
            UNION ALL
            SELECT 'd ' || d::text FROM revenue_days d WHERE d.project_id = \(project.id)
            UNION ALL
            SELECT 'r ' || r::text FROM revenue_runs r WHERE r.project_id = \(project.id)
            UNION ALL
            SELECT 'e ' || e::text FROM revenue_run_days e WHERE e.project_id = \(project.id)
            ORDER BY 1
            """).map { try $0.decode("r", as: String.self) }
    }

    /// Removes the project's rows of `tables` and appends one log row per purchase asking for all of it (0062's and
    /// 0078's backfill), then derives.
    private func replayWhole(_ s: TestStores, _ project: Project, removing tables: [String]) throws {
        try s.pool.withConnection { c in
            for table in tables {
                _ = try c.execute("DELETE FROM \(unsafeSQL: table) WHERE project_id = \(project.id)")
            }
        }
        try s.askForRevenueWhole(project)
        try derive(s, project)
    }

    /// The roll-ups rebuilt from scratch, as 0062's backfill does: every roll-up row removed, then one log row per
    /// purchase asking for all of it.
    private func rebuilt(_ s: TestStores, _ project: Project) throws -> [String] {
        try replayWhole(s, project,
                        removing: ["revenue_transactions", "revenue_days", "revenue_runs", "revenue_run_days"])
        return try rollUps(s, project)
    }

    /// What one derivation of the pending log reads and writes in the charts' tables (pg_stat_xact_user_tables: rows
    /// fetched by index or read by scan, rows inserted, updated or deleted), in a transaction rolled back after. The
    /// counters also hold the session's earlier transactions not yet flushed to the shared statistics: the
    /// derivation's are the difference.
    private func derivationCounts(_ s: TestStores, _ project: Project) throws -> [String] {
        try s.pool.withConnection { c in
            let counts: Query = """
                SELECT relname, COALESCE(idx_tup_fetch, 0) + COALESCE(seq_tup_read, 0) AS read,
                    n_tup_ins + n_tup_upd + n_tup_del AS written
                FROM pg_stat_xact_user_tables
                WHERE relname IN ('revenue_transactions', 'revenue_days', 'revenue_runs', 'revenue_run_days',
                    'revenue_ltv_purchases', 'revenue_ltv_days', 'revenue_movement_days')
                ORDER BY relname
                """
            func read() throws -> [String: (Int, Int)] {
                var m: [String: (Int, Int)] = [:]
                for row in try c.query(counts) {
                    m[try row.decode("relname", as: String.self)] =
                        (try row.decode("read", as: Int.self), try row.decode("written", as: Int.self))
                }
                return m
            }
            _ = try c.execute("BEGIN")
            defer { _ = try? c.execute("ROLLBACK") }
            let before = try read()
            _ = try c.query("SELECT bouncer_derive_changes(\(project.id), 500)")
            return try read().sorted { $0.key < $1.key }.map { table, after in
                let (r0, w0) = before[table] ?? (0, 0)
                return "\(table) read \(after.0 - r0) written \(after.1 - w0)"
            }
        }
    }

    /// A renewal appended after a purchase's last run reads and writes the same rows whether the purchase has 10
    /// periods (2 runs) or 100 (20 runs): its run and the run before it (whose next run it is), the two days whose
    /// counts move. Before (the purchase's runs computed from all its rows per renewal) the reads grew with the
    /// history: every paid row and every run of the purchase.
    func testAnAppendedRenewalTouchesTheSameRowsWhateverThePurchasesHistory() throws {
        let s = try TestStores.make(label: "runsappend")
        defer { s.close() }
        let project = try s.makeProject()
        // Other purchases around them, analysed: the plans of a project in service (on a few rows of one purchase
        // every plan is a scan of the whole project, whatever the statement).
        let others = (0..<300).flatMap { k in (0..<4).map { period("f\(k)", $0, start: start(of: $0)) } }
        for chunk in stride(from: 0, to: others.count, by: 400) {
            _ = try s.purchases.recordTransactions(Array(others[chunk..<min(others.count, chunk + 400)]),
                                                   source: .receipt, userId: "f", deviceId: nil, project: project,
                                                   now: Fixtures.at(0))
        }
        try derive(s, project)
        var counts: [[String]] = []
        for n in [10, 100] {
            let original = "o\(n)"
            _ = try s.purchases.recordTransactions(history(original, n), source: .receipt, userId: "u\(n)",
                                                   deviceId: nil, project: project, now: Fixtures.at(0))
            try derive(s, project)
            _ = try s.rows("ANALYZE")
            // The renewal after period n - 1, in the same block (its run grows by 30 days).
            _ = try s.purchases.recordTransaction(period(original, n, start: start(of: n - 1) + 30),
                                                  userId: "u\(n)", deviceId: nil, project: project,
                                                  now: Fixtures.at(0))
            counts.append(try derivationCounts(s, project))
            try derive(s, project)
        }
        XCTAssertEqual(counts[0], counts[1])
        // Exactly: the new row (read: the row before it, then the new row itself, which extends the last run as it is
        // (before session 19 the run's six periods were read again); and once by the spans of MRR,
        // bouncer_revenue_values_sync, schema/0085), its sale's day row; the last run (its start, itself, its upsert)
        // extended and the run before it pointed at its new end; the old end day's count moved to the new day (the
        // old one back to zero, removed); realized_ltv's (schema/0086) purchase row read (its cohort) and its cohort's
        // day row; mrr_movement's days (schema/0087) nothing: a renewal moves no span's start.
        XCTAssertEqual(counts[1], [
            "revenue_days read 0 written 1",
            "revenue_ltv_days read 0 written 1",
            "revenue_ltv_purchases read 1 written 0",
            "revenue_movement_days read 0 written 0",
            "revenue_run_days read 2 written 3",
            "revenue_runs read 6 written 2",
            "revenue_transactions read 3 written 1",
        ])
        let incremental = try rollUps(s, project)
        XCTAssertEqual(incremental.filter { $0.hasPrefix("r ") }.count, 300 + 2 + 20)
        XCTAssertEqual(try rebuilt(s, project), incremental)
    }

    /// 0078's backfill: a log row asking for a purchase whole over revenue rows already derived (none of them
    /// changes) still writes the purchase's runs and their days.
    func testAPurchaseAskedForWholeGetsItsRunsWhenItsRowsAreUnchanged() throws {
        let s = try TestStores.make(label: "runsbackfill")
        defer { s.close() }
        let project = try s.makeProject()
        _ = try s.purchases.recordTransactions(history("o", 12), source: .receipt, userId: "u", deviceId: nil,
                                               project: project, now: Fixtures.at(0))
        try derive(s, project)
        let derived = try rollUps(s, project)
        XCTAssertEqual(derived.filter { $0.hasPrefix("r ") }.count, 3)
        try replayWhole(s, project, removing: ["revenue_runs", "revenue_run_days"])
        XCTAssertEqual(try rollUps(s, project), derived)
    }

    /// An earlier period refunded (its run split in two), a transaction older than the last run, a refund of the
    /// latest period and a renewal after a gap (a new run): each step's roll-ups equal a rebuild from scratch.
    func testEarlierChangesGiveTheSameRollUpsAsAFullRecompute() throws {
        let s = try TestStores.make(label: "runsrefund")
        defer { s.close() }
        let project = try s.makeProject()
        var facts = history("o", 15)
        // Period 4 missing at first (recorded later: older than the last run).
        let late = facts.remove(at: 4)
        _ = try s.purchases.recordTransactions(facts, source: .receipt, userId: "u", deviceId: nil, project: project,
                                               now: Fixtures.at(0))
        try derive(s, project)
        XCTAssertEqual(try rollUps(s, project), try rebuilt(s, project))
        let steps: [(String, TransactionFacts)] = [
            ("an older transaction", late),
            ("period 1 refunded 5 days in", period("o", 1, start: start(of: 1), signed: 900,
                                                   revokedAt: start(of: 1) + 5)),
            ("the latest period refunded", period("o", 14, start: start(of: 14), signed: 901,
                                                  revokedAt: start(of: 14) + 10)),
            ("a renewal after a gap", period("o", 15, start: start(of: 14) + 100)),
            ("a renewal appended", period("o", 16, start: start(of: 14) + 130)),
        ]
        for (label, t) in steps {
            _ = try s.purchases.recordTransaction(t, userId: "u", deviceId: nil, project: project,
                                                  now: Fixtures.at(0))
            try derive(s, project)
            let incremental = try rollUps(s, project)
            XCTAssertEqual(try rebuilt(s, project), incremental, label)
        }
        // Runs: blocks 0–2 (the first split by the refund: [0, 35) and [60, 150)), the latest block cut at its
        // refund, the renewals after the gap.
        XCTAssertEqual(try s.count("SELECT count(*) FROM revenue_runs WHERE project_id = \(project.id)"), 5)
    }
}
