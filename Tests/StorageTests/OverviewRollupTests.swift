import Domain
import Foundation
import Postgres
import Storage
import TestSupport
import XCTest

/// The overview's per-day rollup of schema/0035 (`overview_days`), derived from the change log's `tx` entries:
/// after the deriver has consumed the log it equals the same sums computed directly from `transactions` (the oracle
/// below, the statement the overview's per-day queries run), whatever the batches, webhooks, crashes and backfill.
final class OverviewRollupTests: XCTestCase {
    /// The rollup as the live tables give it: per environment, UTC day, product and currency, the starts, ends and
    /// refunds the overview counts. The test oracle of `bouncer_overview_roll_up` and of 0035's backfill.
    static let oracle = """
        SELECT t.environment, (k.at AT TIME ZONE 'UTC')::date AS day, t.product_id, t.currency,
            count(*) FILTER (WHERE k.kind = 'start' AND t.type <> 'Consumable') AS starts,
            count(*) FILTER (WHERE k.kind = 'start' AND t.type <> 'Consumable' AND t.expires_date IS NOT NULL) AS start_subs,
            count(*) FILTER (WHERE k.kind = 'start' AND NOT t.is_renewal) AS new_purchases,
            count(*) FILTER (WHERE k.kind = 'start' AND t.is_renewal) AS renewals,
            count(*) FILTER (WHERE k.kind = 'start' AND t.price_milli IS NOT NULL) AS priced,
            COALESCE(sum(t.price_milli) FILTER (WHERE k.kind = 'start'), 0) AS revenue_milli,
            count(*) FILTER (WHERE k.kind = 'end' AND t.type <> 'Consumable') AS ends,
            count(*) FILTER (WHERE k.kind = 'end' AND t.type <> 'Consumable' AND t.expires_date IS NOT NULL) AS end_subs,
            count(*) FILTER (WHERE k.kind = 'refund') AS refunds
        FROM transactions t
        CROSS JOIN LATERAL (VALUES ('start', t.purchase_date), ('end', t.ends_at), ('refund', t.revocation_date))
            k (kind, at)
        WHERE t.project_id = $1 AND k.at IS NOT NULL
        GROUP BY 1, 2, 3, 4
        """

    /// The rollup's rows that count something, in the oracle's shape.
    static let rollup = """
        SELECT environment, day, product_id, CASE WHEN currency_null THEN NULL ELSE currency END AS currency,
            starts, start_subs, new_purchases, renewals, priced, revenue_milli, ends, end_subs, refunds
        FROM overview_days
        WHERE project_id = $1
          AND (starts, start_subs, new_purchases, renewals, priced, revenue_milli, ends, end_subs, refunds)
              <> (0, 0, 0, 0, 0, 0, 0, 0, 0)
        """

    private func rows(_ pool: ConnectionPool, _ sql: String, _ project: Project) throws -> [String] {
        try pool.withConnection { c in
            try c.query("""
                SELECT concat_ws(' ', x.environment, x.day, x.product_id, COALESCE(x.currency, '(none)'), x.starts,
                    x.start_subs, x.new_purchases, x.renewals, x.priced, x.revenue_milli, x.ends, x.end_subs,
                    x.refunds) AS r
                FROM (\(unsafeSQL: sql.replacingOccurrences(of: "$1", with: "'\(project.id.uuidString)'::uuid"))) x
                """).map { try $0.decode("r", as: String.self) }.sorted()
        }
    }

    private func assertRollupIsTheOracle(_ s: TestStores, _ project: Project, file: StaticString = #filePath,
                                         line: UInt = #line) throws {
        let expected = try rows(s.pool, Self.oracle, project)
        XCTAssertFalse(expected.isEmpty, file: file, line: line)
        XCTAssertEqual(try rows(s.pool, Self.rollup, project), expected, file: file, line: line)
    }

    private func pending(_ s: TestStores, _ project: Project) throws -> Int {
        try s.count("SELECT count(*) FROM purchase_changes WHERE project_id = \(project.id)")
    }

    private func deriveAll(_ store: PostgresWebhookStore, _ project: Project, limit: Int = 500) throws {
        while try store.deriveChanges(projectId: project.id, limit: limit) > 0 {}
    }

    /// SplitMix64: the same cases on every run.
    private struct Random {
        var state: UInt64
        mutating func next(_ n: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(n))
        }
    }

    /// One transaction of the random workload: a product of each type, prices with and without a currency, start
    /// and expiry at any hour (so ends and starts fall on other days than their purchase).
    private static func transaction(_ id: String, original: String, product: Int, start: Double, hours: Int,
                                    price: Int?, currency: String?, environment: StoreEnvironment) -> TransactionFacts {
        let (productId, type): (String, ProductType) = [
            ("pro.monthly", .autoRenewable), ("pro.yearly", .autoRenewable), ("coins", .consumable),
            ("lifetime", .nonConsumable),
        ][product]
        var payload = #"{"transactionId": "\#(id)""#
        if let price { payload += #", "price": \#(price)"# }
        if let currency { payload += #", "currency": "\#(currency)""# }
        payload += "}"
        return TransactionFacts(
            transactionId: id, originalTransactionId: original, productId: productId, type: type,
            environment: environment, purchaseDate: Fixtures.at(start), originalPurchaseDate: Fixtures.at(start),
            expiresDate: type == .autoRenewable ? Fixtures.at(start + Double(hours) / 24) : nil,
            revocationDate: nil, revocationReason: nil, appAccountToken: nil, ownershipType: .purchased,
            signedDate: Fixtures.at(start), payloadJSON: payload)
    }

    /// Records a random workload (new purchases, renewals, re-posts, later signatures that move dates and prices,
    /// refunds), deriving in random batches as it goes.
    private func record(_ s: TestStores, _ store: PostgresWebhookStore, _ project: Project, seed: UInt64,
                        count: Int) throws {
        var random = Random(state: seed)
        var recorded: [TransactionFacts] = []
        for n in 0..<count {
            let choice = random.next(10)
            var t: TransactionFacts
            if choice < 4 || recorded.isEmpty {
                let product = random.next(4)
                t = Self.transaction("\(seed)-\(n)", original: "\(seed)-\(n)", product: product,
                                     start: Double(random.next(40 * 24)) / 24, hours: 24 * (product == 1 ? 365 : 30) + random.next(24),
                                     price: random.next(5) == 0 ? nil : 990 * (1 + random.next(3)),
                                     currency: [nil, "USD", "EUR", ""][random.next(4)],
                                     environment: random.next(3) == 0 ? .sandbox : .production)
            } else {
                let previous = recorded[random.next(recorded.count)]
                t = previous
                t.signedDate = previous.signedDate.addingTimeInterval(Double(1 + random.next(3)) * 3600)
                switch choice {
                case 4, 5, 6:  // a renewal of the same purchase, starting at the previous expiry
                    guard previous.type == .autoRenewable, let expires = previous.expiresDate else { continue }
                    t.transactionId = "\(seed)-\(n)"
                    t.purchaseDate = expires
                    t.expiresDate = expires.addingTimeInterval(30 * Fixtures.day + Double(random.next(24)) * 3600)
                    t.signedDate = expires
                    t.payloadJSON = previous.payloadJSON.replacingOccurrences(of: previous.transactionId,
                                                                              with: t.transactionId)
                case 7:  // a refund
                    t.revocationDate = previous.purchaseDate.addingTimeInterval(Double(1 + random.next(72)) * 3600)
                    t.revocationReason = 0
                case 8:  // signed again with other facts: a moved expiry and another price
                    t.expiresDate = previous.expiresDate?.addingTimeInterval(Double(random.next(48)) * 3600)
                    t.payloadJSON = #"{"transactionId": "\#(t.transactionId)", "price": \#(random.next(5000)), "currency": "USD"}"#
                default:  // re-posted as it was
                    t = previous
                }
            }
            let user: String? = random.next(3) == 0 ? nil : "user\(random.next(5))"
            _ = try s.purchases.recordTransaction(t, userId: user, deviceId: nil, project: project,
                                                  now: t.signedDate)
            recorded.append(t)
            if random.next(7) == 0 {
                _ = try store.deriveChanges(projectId: project.id, limit: 1 + random.next(5))
            }
        }
    }

    func testRollupEqualsTheTransactionsOnRandomDataWithAndWithoutAWebhook() throws {
        let s = try TestStores.make(label: "rollup")
        defer { s.close() }
        let store = PostgresWebhookStore(pool: s.pool)
        let plain = try s.makeProject(1)
        let hooked = try s.makeProject(2)
        try record(s, store, hooked, seed: 7, count: 40)
        // Created midway: the seed consumes the pending rows; they still count.
        _ = try store.upsertEndpoint(projectId: hooked.id, url: "https://h.example/x", events: nil,
                                     secret: PurchaseChangesTests.sealed, now: Fixtures.t0)
        try record(s, store, hooked, seed: 8, count: 160)
        try record(s, store, plain, seed: 9, count: 200)
        try deriveAll(store, plain, limit: 3)
        try deriveAll(store, hooked, limit: 7)
        try assertRollupIsTheOracle(s, plain)
        try assertRollupIsTheOracle(s, hooked)
        // The workload exercised every column.
        let sums = try s.rows("""
            SELECT concat_ws(' ', sum(renewals) > 0, sum(ends) > 0, sum(refunds) > 0, sum(priced) > 0,
                sum(starts) > 0, sum(new_purchases) > 0, sum(end_subs) > 0, bool_or(currency_null),
                bool_or(currency = '' AND NOT currency_null)) AS r FROM overview_days
            """).first?.decode("r", as: String.self)
        XCTAssertEqual(sums, "t t t t t t t t t")
    }

    func testRollupIsExactlyOnceAcrossADeriverThatDiesBeforeItsCommit() throws {
        let s = try TestStores.make(label: "rollupcrash")
        defer { s.close() }
        let store = PostgresWebhookStore(pool: s.pool)
        let project = try s.makeProject()
        try record(s, store, project, seed: 11, count: 80)
        let before = try rows(s.pool, Self.rollup, project)
        let logged = try pending(s, project)
        XCTAssertGreaterThan(logged, 0)
        // A deriver that dies after rolling up and deleting, before its commit: nothing it did stays.
        try s.pool.withConnection { c in
            _ = try c.execute("BEGIN")
            _ = try c.query("SELECT bouncer_derive_changes(\(project.id), 1000)")
            XCTAssertEqual(try c.query("SELECT count(*) AS n FROM purchase_changes WHERE project_id = \(project.id)")
                .first?.decode("n", as: Int.self), 0)
            _ = try c.execute("ROLLBACK")
        }
        XCTAssertEqual(try pending(s, project), logged)
        XCTAssertEqual(try rows(s.pool, Self.rollup, project), before)
        // The restarted deriver consumes each row once; a second pass finds nothing.
        try deriveAll(store, project)
        try assertRollupIsTheOracle(s, project)
        try deriveAll(store, project)
        try assertRollupIsTheOracle(s, project)
    }

    /// 0035 backfills the rollup from the transactions already stored; their pending log rows (without tx) add
    /// nothing, and later changes arrive through the log.
    func testMigrationBackfillsTheRollupFromExistingTransactions() throws {
        let settings = try TestDatabase.create(label: "rollupbackfill")
        let pool = ConnectionPool(settings: settings, configuration: .init(size: 2))
        defer { pool.shutdown() }
        try Migrator(pool: pool, migrations: Migration.embedded.filter { $0.version < 27 }).migrate()
        let s = TestStores(pool: pool, projects: PostgresProjectStore(pool: pool),
                           purchases: PostgresPurchaseStore(pool: pool))
        let store = PostgresWebhookStore(pool: pool)
        let project = try s.makeProject()
        try record(s, store, project, seed: 21, count: 60)
        XCTAssertGreaterThan(try pending(s, project), 0)
        XCTAssertEqual(try Migrator(pool: pool).migrate(), [27])
        try assertRollupIsTheOracle(s, project)
        try record(s, store, project, seed: 22, count: 60)
        try deriveAll(store, project)
        try assertRollupIsTheOracle(s, project)
    }

    /// Concurrent first posts of one transaction, each signed later with another price and expiry: the poster
    /// whose update meets a row committed after its snapshot cannot read the old fields and reruns (40001), so each
    /// change is logged with the fields it replaced.
    func testConcurrentPostsOfOneTransactionLogEachChangeOnce() throws {
        let s = try TestStores.make(label: "rollupracing", poolSize: 16)
        defer { s.close() }
        let project = try s.makeProject()
        let purchases = s.purchases
        var errors: [String?] = []
        for round in 0..<5 {
            errors += onThreads(16) { i -> String? in
                var t = Fixtures.monthly("race\(round)", original: "race\(round)", start: 0, signed: Double(i) / 24)
                t.expiresDate = Fixtures.at(30 + Double(i) / 24)
                t.payloadJSON = #"{"transactionId": "race\#(round)", "price": \#(1000 + i), "currency": "USD"}"#
                do {
                    _ = try purchases.recordTransaction(t, userId: nil, deviceId: nil, project: project,
                                                        now: Fixtures.t0)
                    return nil
                } catch {
                    return String(reflecting: error)
                }
            }.map { $0 ?? "no result" }
        }
        XCTAssertEqual(errors.compactMap { $0 }, [])
        try deriveAll(PostgresWebhookStore(pool: s.pool), project)
        try assertRollupIsTheOracle(s, project)
        XCTAssertEqual(try s.count("""
            SELECT sum(starts)::int8 FROM overview_days WHERE project_id = \(project.id)
            """), 5)
    }
}
