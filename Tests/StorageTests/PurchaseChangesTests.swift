import Domain
import Foundation
import Postgres
import Storage
import XCTest

/// The fact log of schema/0025 (`purchase_changes`): the record functions append one row per call that changed
/// something, and webhook events are derived from it afterwards (`PostgresWebhookStore.deriveChanges`), only for
/// projects with a webhook.
final class PurchaseChangesTests: XCTestCase {
    static let sealed = SealedSecret(keyId: "0123456789abcdef", bytes: [1, 2, 3])

    /// Derives the project's log until nothing is left; the rows consumed.
    @discardableResult
    private func deriveAll(_ store: PostgresWebhookStore, _ project: Project) throws -> Int {
        var total = 0
        while true {
            let n = try store.deriveChanges(projectId: project.id, limit: 500)
            if n == 0 { return total }
            total += n
        }
    }

    /// A fresh database with one project mapping `pro.monthly` to `pro`; the caller closes the stores.
    private func stores(_ label: String) throws -> (TestStores, PostgresWebhookStore, Project) {
        let s = try TestStores.make(label: label)
        let project = try s.makeProject()
        _ = try s.projects.setProduct(projectId: project.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]),
                                      now: Fixtures.t0)
        return (s, PostgresWebhookStore(pool: s.pool), project)
    }

    private func count(_ s: TestStores, _ table: String, _ project: Project) throws -> Int {
        try s.count("SELECT count(*) FROM \(unsafeSQL: table) WHERE project_id = \(project.id)")
    }

    func testProjectWithoutWebhookWritesNoWebhookRows() throws {
        let (s, store, project) = try stores("nowebhook")
        defer { s.close() }
        // A purchase, renewal info (billing retry, grace, auto-renew off), a renewal, a transfer, a refund.
        _ = try s.purchases.recordTransaction(Fixtures.monthly("t1", start: 0), userId: "alice", deviceId: nil,
                                              project: project, now: Fixtures.at(0))
        _ = try s.purchases.recordRenewal(Fixtures.renewal(signed: 1, autoRenew: 0, grace: 40, retry: true),
                                          project: project, now: Fixtures.at(1))
        _ = try s.purchases.recordTransaction(Fixtures.monthly("t2", start: 30), userId: "alice", deviceId: nil,
                                              project: project, now: Fixtures.at(30))
        _ = try s.purchases.recordTransaction(Fixtures.monthly("t2", start: 30, signed: 31), userId: "bob", deviceId: nil,
                                              project: project, now: Fixtures.at(31))
        let refund = Fixtures.monthly("t2", start: 30, signed: 32, revokedAt: 31)
        _ = try s.purchases.recordTransaction(refund, userId: nil, deviceId: nil, project: project, now: Fixtures.at(32))
        // One row per call that changed something; a repeated fact changes nothing and appends nothing.
        XCTAssertEqual(try count(s, "purchase_changes", project), 5)
        _ = try s.purchases.recordTransaction(refund, userId: nil, deviceId: nil, project: project, now: Fixtures.at(33))
        XCTAssertEqual(try count(s, "purchase_changes", project), 5)

        XCTAssertEqual(try deriveAll(store, project), 5)
        for table in ["purchase_changes", "webhook_events", "webhook_purchase_states", "webhook_entitlement_states"] {
            XCTAssertEqual(try count(s, table, project), 0, table)
        }
    }

    /// A batch costs its own rows whatever the backlog behind it: consuming 500 of 4,000 rows touched 63,164 buffers
    /// here (254,783 of 5,500 in bench/api) while the delete was `seq IN (SELECT … LIMIT)`, whose generic plan on a
    /// queue's statistics reran the LIMIT scan for every row of the backlog.
    func testABatchTouchesItsOwnRowsWhateverTheBacklog() throws {
        let (s, _, project) = try stores("backlog")
        defer { s.close() }
        let plan: [String] = try s.pool.withConnection { c in
            // The log as ANALYZE finds it in service, a queue: pages written, every row consumed. Then a backlog.
            func append(_ n: Int) throws {
                _ = try c.execute("""
                    INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
                    SELECT \(project.id), 'Production', 'o' || g, jsonb_build_object('bound', 'u' || g), now()
                    FROM generate_series(1, \(n)) g
                    """)
            }
            try append(1000)
            _ = try c.execute("DELETE FROM purchase_changes WHERE project_id = \(project.id)")
            _ = try c.execute("ANALYZE purchase_changes")
            try append(4000)
            return try c.query("""
                EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF)
                SELECT bouncer_derive_changes('\(unsafeSQL: project.id.uuidString)'::uuid, 500)
                """).map { try $0.decode("QUERY PLAN", as: String.self) }
        }
        let buffers = plan.lazy.compactMap { line -> Int? in
            guard let range = line.range(of: "shared hit=") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }.first
        XCTAssertLessThan(try XCTUnwrap(buffers, plan.joined(separator: "\n")), 10 * 500, plan.joined(separator: "\n"))
        XCTAssertEqual(try count(s, "purchase_changes", project), 3500)
    }

    /// The same with a webhook: the batch is its first rows' transactions, whole. Their rows were read three times
    /// (the revenue roll-up's input, the events' statement, the delete) by `xact = ANY (…)` under the primary key
    /// `(project_id, seq)`: each a walk of the project's whole backlog, O(backlog x batches) through a drain. 150 rows
    /// behind a backlog of 300 and of 6,000 cost 464 and 3,104 buffers then (486 and 2,967 analysed with the rows);
    /// read once through purchase_changes_xact_idx (0044), 351 and 354 (395 and 408).
    func testAWebhookBatchTouchesItsOwnRowsWhateverTheBacklog() throws {
        let (s, store, project) = try stores("webhookbacklog")
        defer { s.close() }
        _ = try store.upsertEndpoint(projectId: project.id, url: "https://h.example/x", events: nil, secret: Self.sealed,
                                     now: Date())
        // Rows of 50 per recording transaction, ~1 kB each (a log row is ~1.2 kB in service); the batch of 120 rows
        // takes 3 transactions whole (150 rows).
        func derive(backlog: Int, analyzeWithRows: Bool) throws -> (buffers: Int, plan: String, left: Int) {
            let plan: [String] = try s.pool.withConnection { c in
                func append(_ n: Int) throws {
                    for from in stride(from: 0, to: n, by: 50) {
                        _ = try c.execute("""
                            INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data,
                                created_at)
                            SELECT \(project.id), 'Production', 'o' || g,
                                jsonb_build_object('pad', repeat('x', 1000)), now()
                            FROM generate_series(\(from + 1), \(from + 50)) g
                            """)
                    }
                }
                // Vacuumed, so that each run walks its own rows only, not the dead ones of the runs before.
                _ = try c.execute("DELETE FROM purchase_changes WHERE project_id = \(project.id)")
                _ = try c.execute("VACUUM purchase_changes")
                if analyzeWithRows {
                    try append(backlog)
                    _ = try c.execute("VACUUM ANALYZE purchase_changes")
                } else {
                    // A queue as ANALYZE finds it in service: pages written, every row consumed. Then the backlog.
                    try append(1000)
                    _ = try c.execute("DELETE FROM purchase_changes WHERE project_id = \(project.id)")
                    _ = try c.execute("VACUUM ANALYZE purchase_changes")
                    try append(backlog)
                }
                return try c.query("""
                    EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF)
                    SELECT bouncer_derive_changes('\(unsafeSQL: project.id.uuidString)'::uuid, 120)
                    """).map { try $0.decode("QUERY PLAN", as: String.self) }
            }
            let buffers = plan.lazy.compactMap { line -> Int? in
                guard let range = line.range(of: "shared hit=") else { return nil }
                return Int(line[range.upperBound...].prefix { $0.isNumber })
            }.first
            return (try XCTUnwrap(buffers, plan.joined(separator: "\n")), plan.joined(separator: "\n"),
                    try count(s, "purchase_changes", project))
        }
        _ = try derive(backlog: 300, analyzeWithRows: false)  // the session's first plans and catalog reads
        for analyzeWithRows in [false, true] {
            let small = try derive(backlog: 300, analyzeWithRows: analyzeWithRows)
            XCTAssertEqual(small.left, 150)
            let large = try derive(backlog: 6000, analyzeWithRows: analyzeWithRows)
            XCTAssertEqual(large.left, 5850, "the 3 transactions whole, nothing more")
            // Twenty times the backlog, the same batch: the same work, give or take an index's extra level.
            XCTAssertLessThan(large.buffers, small.buffers * 3 / 2,
                              "analysed with rows: \(analyzeWithRows)\n\(small.plan)\n\(large.plan)")
        }
        XCTAssertEqual(try count(s, "webhook_events", project), 0)
    }

    /// The money roll-up of one purchase reads that purchase's transactions, whatever the project's size: its ids
    /// query named no environment, so `transactions_original_idx` (project, environment, original id) served it by
    /// the project alone, every entry of the project's (256 buffers and 693 µs a call in bench/api, one call per
    /// rolled-up purchase: half the deriver's time). One purchase's roll-up in a project of 200 and of 4,000
    /// transactions: 18 and 142 buffers then, 14 and 11 by the index's whole key.
    func testAPurchasesMoneyRollUpReadsItsOwnTransactionsWhateverTheProject() throws {
        let (s, _, project) = try stores("rollupsize")
        defer { s.close() }
        var recorded = 0
        func grow(to n: Int) throws {
            while recorded < n {
                let chunk = (recorded..<min(n, recorded + 500)).map {
                    Fixtures.monthly("t\($0)", original: "o\($0)", start: 0)
                }
                _ = try s.purchases.recordTransactions(chunk, source: .receipt, userId: "alice", deviceId: nil,
                                                       project: project, now: Fixtures.at(0))
                recorded += chunk.count
            }
        }
        func buffers() throws -> (Int, String) {
            let plan: [String] = try s.pool.withConnection { c in
                _ = try c.execute("ANALYZE transactions")
                let environment = try XCTUnwrap(c.query("""
                    SELECT environment FROM transactions WHERE project_id = \(project.id) AND transaction_id = 't1'
                    """).first).decode("environment", as: String.self)
                let call: Query = """
                    EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF)
                    SELECT bouncer_revenue_roll_up(\(project.id), jsonb_build_array(jsonb_build_object(
                        'environment', \(environment)::text, 'original_transaction_id', 'o1',
                        'tx', '{"revenue": "all"}'::jsonb)))
                    """
                _ = try c.query(call)  // the session's first plans and catalog reads
                return try c.query(call).map { try $0.decode("QUERY PLAN", as: String.self) }
            }
            let n = plan.lazy.compactMap { line -> Int? in
                guard let range = line.range(of: "shared hit=") else { return nil }
                return Int(line[range.upperBound...].prefix { $0.isNumber })
            }.first
            return (try XCTUnwrap(n, plan.joined(separator: "\n")), plan.joined(separator: "\n"))
        }
        try grow(to: 200)
        let small = try buffers()
        try grow(to: 4000)
        let large = try buffers()
        XCTAssertLessThan(large.0, small.0 + 20, "\(small.1)\n\(large.1)")
    }

    /// A renewal's money roll-up reads what the renewal adds, whatever the purchase's history: its transaction from
    /// the changed date on (transactions_original_idx's key has the purchase date, 0100: by (project, environment,
    /// original id) alone it fetched every earlier transaction of the purchase from the heap and dropped them), the
    /// row before it, the span and the run it extends (bouncer_revenue_runs_sync read every period of the run again).
    /// Two purchases renewed the same month after 6 and after 60 periods, each month's rows on pages of their own as
    /// in service: the roll-up 178 and 258 buffers before, 169 and 159 now; the whole derivation of the next renewal's
    /// log row 167 and 248 before, 157 and 148 now.
    func testARenewalsRollUpReadsWhatItAddsWhateverThePurchasesHistory() throws {
        let (s, store, project) = try stores("rollupdepth")
        defer { s.close() }
        func periods(_ original: String, _ range: Range<Int>) -> [TransactionFacts] {
            range.map { Fixtures.monthly("\(original)-\($0)", original: original, start: Double($0 * 30), price: 9990) }
        }
        // A month at a time, as they arrive in service: each period's row on a page of its own, among others'.
        for month in 0..<60 {
            let others = (0..<25).map { Fixtures.monthly("f\(month)-\($0)", original: "f\(month)-\($0)",
                                                        start: Double(month * 30), price: 9990) }
            let renewals = month >= 54 ? periods("warm", month..<month + 1) + periods("short", month..<month + 1) : []
            _ = try s.purchases.recordTransactions(periods("long", month..<month + 1)
                                                   + periods("warmlong", month..<month + 1) + renewals + others,
                                                   source: .receipt, userId: "alice", deviceId: nil,
                                                   project: project, now: Fixtures.at(0))
            while try store.deriveChanges(projectId: project.id, limit: 500) > 0 {}
        }
        // Analysed as in service (and before the first calls, which plan the statements: an ANALYZE after them
        // invalidates their plans).
        _ = try s.rows("ANALYZE")
        func buffers(_ call: Query) throws -> (Int, String) {
            let plan: [String] = try s.pool.withConnection { c in
                try c.query(call).map { try $0.decode("QUERY PLAN", as: String.self) }
            }
            let n = plan.lazy.compactMap { line -> Int? in
                guard let range = line.range(of: "shared hit=") else { return nil }
                return Int(line[range.upperBound...].prefix { $0.isNumber })
            }.first
            return (try XCTUnwrap(n, plan.joined(separator: "\n")), plan.joined(separator: "\n"))
        }
        func record(_ original: String, _ nth: Int) throws {
            _ = try s.purchases.recordTransactions(periods(original, nth..<nth + 1), source: .receipt, userId: "alice",
                                                   deviceId: nil, project: project, now: Fixtures.at(0))
        }
        // The roll-up alone, asked for the renewal as the log row asks.
        func renew(_ original: String, _ nth: Int) throws -> (Int, String) {
            try record(original, nth)
            return try buffers("""
                EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF)
                SELECT bouncer_revenue_roll_up(\(project.id), jsonb_build_array(jsonb_build_object(
                    'environment', 'Production', 'original_transaction_id', \(original)::text,
                    'tx', jsonb_build_object('new', jsonb_build_object('purchase_date',
                        \(Fixtures.at(Double(nth * 30)))::timestamptz)))))
                """)
        }
        // Renewed the same month (the charts' rows of a date are the same), after 6 and after 60 periods.
        // Each shape's first call plans the statements its branches take: not counted.
        _ = try renew("warm", 60)
        _ = try renew("warmlong", 60)
        let short = try renew("short", 60)
        let long = try renew("long", 60)
        XCTAssertLessThan(long.0, short.0 + 20, "\(short.1)\n\(long.1)")
        // And the roll-up wrote the renewals (its row, its span's end, its run's end).
        XCTAssertEqual(try s.rows("""
            SELECT original_transaction_id || ' ' || count(*) AS r FROM revenue_transactions
            WHERE project_id = \(project.id) AND original_transaction_id IN ('warm', 'short', 'long')
            GROUP BY original_transaction_id ORDER BY 1
            """).map { try $0.decode("r", as: String.self) }, ["long 61", "short 7", "warm 7"])
        XCTAssertEqual(try s.rows("""
            SELECT v.original_transaction_id || ' ' || (v.ends_at = r.ends_at) || ' ' || (r.ends_at = \(
                Fixtures.at(61 * 30))::timestamptz OR v.original_transaction_id <> 'long') AS r
            FROM revenue_values v JOIN revenue_runs r USING (project_id, environment, original_transaction_id)
            WHERE v.project_id = \(project.id) AND v.original_transaction_id IN ('warm', 'short', 'long') ORDER BY 1
            """).map { try $0.decode("r", as: String.self) }, ["long true true", "short true true", "warm true true"])
        // The whole derivation of the next renewal's log row (overview, revenue, lifetime value, the finish queue).
        while try store.deriveChanges(projectId: project.id, limit: 500) > 0 {}
        func derive(_ original: String, _ nth: Int) throws -> (Int, String) {
            try record(original, nth)
            return try buffers("""
                EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT bouncer_derive_changes(\(project.id), 500)
                """)
        }
        // A renewal of each first (the first calls of a shape plan what they read: catalog reads, not counted).
        for original in ["warm", "warmlong", "short", "long"] { _ = try derive(original, 61) }
        let shortDerived = try derive("short", 62)
        let longDerived = try derive("long", 62)
        XCTAssertLessThan(longDerived.0, shortDerived.0 + 20, "\(shortDerived.1)\n\(longDerived.1)")
    }

    /// A monthly subscription bought a minute ago, active for 30 days.
    private func current(_ id: String) -> TransactionFacts {
        var t = Fixtures.monthly(id, original: id, start: 0)
        t.purchaseDate = Date().addingTimeInterval(-60)
        t.originalPurchaseDate = t.purchaseDate
        t.expiresDate = Date().addingTimeInterval(30 * Fixtures.day)
        t.signedDate = t.purchaseDate
        return t
    }

    func testCreatedWebhookAnnouncesOnlyWhatFollowsAndDerivesOnce() throws {
        let (s, store, project) = try stores("webhookseed")
        defer { s.close() }
        _ = try s.purchases.recordTransaction(current("a1"), userId: "alice", deviceId: nil, project: project, now: Date())
        XCTAssertEqual(try count(s, "purchase_changes", project), 1)

        // Created: alice's holdings are what was announced; her pending change is consumed, not replayed.
        let (_, created) = try store.upsertEndpoint(projectId: project.id, url: "https://h.example/x", events: nil,
                                                    secret: Self.sealed, now: Date())
        XCTAssertTrue(created)
        XCTAssertEqual(try count(s, "purchase_changes", project), 0)
        XCTAssertEqual(try count(s, "webhook_purchase_states", project), 1)
        XCTAssertEqual(try count(s, "webhook_entitlement_states", project), 1)
        XCTAssertEqual(try deriveAll(store, project), 0)
        XCTAssertEqual(try count(s, "webhook_events", project), 0)

        // bob's purchase after it: its events, once, and only when derived.
        _ = try s.purchases.recordTransaction(current("b1"), userId: "bob", deviceId: nil, project: project, now: Date())
        XCTAssertEqual(try count(s, "webhook_events", project), 0, "nothing in the receipt's transaction")
        XCTAssertEqual(try deriveAll(store, project), 1)
        XCTAssertEqual(try deriveAll(store, project), 0)
        let events = try s.rows("""
            SELECT user_id, type FROM webhook_events WHERE project_id = \(project.id) ORDER BY seq
            """).map { "\(try $0.decode("user_id", as: String.self)) \(try $0.decode("type", as: String.self))" }
        XCTAssertEqual(events, ["bob subscription.started", "bob entitlement.granted"])

        // Deleted: no webhook rows left.
        XCTAssertTrue(try store.deleteEndpoint(projectId: project.id))
        for table in ["webhook_events", "webhook_purchase_states", "webhook_entitlement_states"] {
            XCTAssertEqual(try count(s, table, project), 0, table)
        }
    }

    /// A monthly subscription purchase of `original`, bought `start` seconds from `base`, active `days` days.
    private func facts(_ id: String, original: String = "r1", base: Date, start: TimeInterval, days: Double,
                       signed: TimeInterval? = nil, refundedAt: TimeInterval? = nil) -> TransactionFacts {
        var t = Fixtures.monthly(id, original: original, start: 0)
        t.purchaseDate = base.addingTimeInterval(start)
        t.originalPurchaseDate = base.addingTimeInterval(-60)
        t.expiresDate = base.addingTimeInterval(start + days * Fixtures.day)
        t.signedDate = base.addingTimeInterval(signed ?? start)
        t.revocationDate = refundedAt.map { base.addingTimeInterval($0) }
        t.revocationReason = refundedAt.map { _ in 0 }
        return t
    }

    /// The events of `changes` (each its own transaction) in a project with a webhook, as "user type data", derived
    /// after each change (`each`) or once after all of them.
    private func events(_ s: TestStores, project n: Int, each: Bool,
                        _ changes: [(PostgresPurchaseStore, Project) throws -> Void]) throws -> [String] {
        let store = PostgresWebhookStore(pool: s.pool)
        let project = try s.makeProject(n)
        _ = try s.projects.setProduct(projectId: project.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]),
                                      now: Fixtures.t0)
        _ = try store.upsertEndpoint(projectId: project.id, url: "https://h.example/x", events: nil, secret: Self.sealed,
                                     now: Date())
        for change in changes {
            try change(s.purchases, project)
            if each { try deriveAll(store, project) }
        }
        XCTAssertEqual(try deriveAll(store, project), each ? 0 : changes.count)
        return try s.rows("""
            SELECT user_id, type, data::text AS data FROM webhook_events WHERE project_id = \(project.id) ORDER BY seq
            """).map {
            "\(try $0.decode("user_id", as: String.self)) \(try $0.decode("type", as: String.self)) "
                + (try $0.decode("data", as: String.self))
        }
    }

    /// Derives `changes` once after each and once after all of them (in two projects); both lists, the first's types.
    private func replayed(_ label: String, _ changes: [(PostgresPurchaseStore, Project) throws -> Void]) throws
        -> (each: [String], batch: [String], types: [String])
    {
        let s = try TestStores.make(label: label)
        defer { s.close() }
        let each = try events(s, project: 1, each: true, changes)
        let batch = try events(s, project: 2, each: false, changes)
        return (each, batch, each.map { $0.split(separator: " ").prefix(2).joined(separator: " ") })
    }

    func testABatchReplaysEachChangeInOrder() throws {
        let base = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let renewal = facts("r2", base: base, start: -30, days: 60)
        let (each, batch, types) = try replayed("replay", [
            { try _ = $0.recordTransaction(self.facts("r1", base: base, start: -60, days: 30), userId: "alice",
                                           deviceId: nil, project: $1, now: base) },
            { try _ = $0.recordTransaction(renewal, userId: "alice", deviceId: nil, project: $1, now: base) },
            { try _ = $0.recordTransaction(self.facts("r2", base: base, start: -30, days: 60, signed: -5, refundedAt: -10),
                                           userId: nil, deviceId: nil, project: $1, now: base) },
            { try _ = $0.recordTransaction(self.facts("r2", base: base, start: -30, days: 60, signed: -4, refundedAt: -10),
                                           userId: "bob", deviceId: nil, project: $1, now: base) },
        ])
        XCTAssertEqual(types, [
            "alice subscription.started", "alice entitlement.granted", "alice subscription.renewed",
            "alice transaction.refunded", "alice entitlement.revoked", "bob purchase.transferred",
        ])
        XCTAssertTrue(each[4].contains(#""reason": "refunded""#), each[4])
        XCTAssertEqual(batch, each, "one derive of the four changes announces what four derives did")
    }

    /// A batch refreshes the users of consecutive transactions together (0042), but a user met again starts a new
    /// group: alice's second purchase must be compared with the copy her first one left (else her entitlement would be
    /// granted twice).
    func testABatchRefreshesSeveralTransactionsTogetherAndAUserMetAgainAfterTheFirst() throws {
        let base = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let buy = { (user: String, original: String) -> (PostgresPurchaseStore, Project) throws -> Void in
            { try _ = $0.recordTransaction(self.facts(original, original: original, base: base, start: -60, days: 30),
                                           userId: user, deviceId: nil, project: $1, now: base) }
        }
        let (each, batch, types) = try replayed("groups", [
            buy("alice", "a1"), buy("bob", "b1"), buy("alice", "a2"), buy("carol", "c1"), buy("bob", "b2"),
        ])
        XCTAssertEqual(types, [
            "alice subscription.started", "alice entitlement.granted", "bob subscription.started",
            "bob entitlement.granted", "alice subscription.started", "carol subscription.started",
            "carol entitlement.granted", "bob subscription.started",
        ])
        XCTAssertEqual(batch, each, "one derive of the five receipts announces what five derives did")
    }

    func testAPurchaseRefundedBeforeTheDeriverRanIsAnnouncedBeforeItsRefund() throws {
        let base = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let (each, batch, types) = try replayed("refundfirst", [
            { try _ = $0.recordTransaction(self.facts("r1", base: base, start: -60, days: 30), userId: "alice",
                                           deviceId: nil, project: $1, now: base) },
            { try _ = $0.recordTransaction(self.facts("r1", base: base, start: -60, days: 30, signed: -5, refundedAt: -10),
                                           userId: nil, deviceId: nil, project: $1, now: base) },
        ])
        XCTAssertEqual(types, ["alice subscription.started", "alice entitlement.granted", "alice transaction.refunded",
                               "alice entitlement.revoked"])
        XCTAssertEqual(batch, each)
    }

    func testAReceiptIsReplayedWholeAsItsTransactionsTriggersRanWhateverTheBatch() throws {
        let base = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let day = Fixtures.day
        // A receipt's history: a lapsed month renewed, and a second subscription to the same entitlement.
        let receipt = [facts("r1", base: base, start: -40 * day, days: 30), facts("r2", base: base, start: -10 * day, days: 30),
                       facts("q1", original: "q1", base: base, start: -5 * day, days: 30)]
        var lists: [[String]] = []
        for (n, limit) in [(1, 1), (2, 500)] {
            let s = try TestStores.make(label: "receipt\(n)")
            defer { s.close() }
            let store = PostgresWebhookStore(pool: s.pool)
            let project = try s.makeProject()
            _ = try s.projects.setProduct(projectId: project.id,
                                          ProductMapping(productId: "pro.monthly", entitlements: ["pro"]), now: Fixtures.t0)
            _ = try store.upsertEndpoint(projectId: project.id, url: "https://h.example/x", events: nil,
                                         secret: Self.sealed, now: Date())
            _ = try s.purchases.recordTransactions(receipt, source: .receipt, userId: "alice", deviceId: nil,
                                                   project: project, now: base)
            XCTAssertEqual(try store.deriveChanges(projectId: project.id, limit: limit), 3, "the transaction's 3 rows")
            lists.append(try s.rows("""
                SELECT type, data ->> 'original_transaction_id' AS o FROM webhook_events
                WHERE project_id = \(project.id) ORDER BY seq
                """).map { "\(try $0.decode("type", as: String.self)) \(try $0.decode("o", as: String.self))" })
        }
        // 0021's order: the renewal's transition event in the transaction, the refresh at its commit.
        XCTAssertEqual(lists[0], ["subscription.renewed r1", "subscription.started r1", "subscription.started q1",
                                  "entitlement.granted q1"])
        XCTAssertEqual(lists[1], lists[0])
    }

    func testOneDeriverPerProjectAtATime() throws {
        let s = try TestStores.make(label: "deriverlock")
        defer { s.close() }
        let store = PostgresWebhookStore(pool: s.pool)
        let project = try s.makeProject()
        _ = try s.purchases.recordTransaction(current("c1"), userId: "carol", deviceId: nil, project: project, now: Date())
        let other = try Connection(settings: s.pool.settings)
        _ = try other.query("SELECT pg_advisory_lock(16980, hashtext(\(project.id)::uuid::text))")
        XCTAssertEqual(try store.deriveChanges(projectId: project.id, limit: 500), 0, "another deriver holds the project")
        XCTAssertEqual(try count(s, "purchase_changes", project), 1)
        _ = try other.query("SELECT pg_advisory_unlock_all()")
        XCTAssertEqual(try store.deriveChanges(projectId: project.id, limit: 500), 1)
        XCTAssertEqual(try store.projectsWithChanges(limit: 10), [])
    }
}
