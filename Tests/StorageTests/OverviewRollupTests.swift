import Domain
import Foundation
import Postgres
import Storage
import TestSupport
import XCTest

/// The overview read from the rollups of schema/0035 (`PostgresOverviewMetricsStore`) equals the index-based
/// statements it replaced (`OverviewSpecification`) on random data: several projects, environments, products of every
/// type, currencies (absent and empty included), free trials, renewals, refunds, moved expiries and prices, events
/// on midnights, ranges and "now"s before, around and after the clock (today's partial day, and a past "now" whose
/// instants were pruned), whatever the deriver has consumed, with or without a webhook, across a deriver that dies
/// before its commit, and after the migration's backfill. Equal `OverviewMetrics` render equal JSON bytes
/// (`APIHandlers.overview` writes them in a fixed order).
final class OverviewRollupTests: XCTestCase {
    private static let day: TimeInterval = 86_400
    /// Midnight UTC 30 days before today: the workload runs from there to 5 days after today.
    private static let base = Date(timeIntervalSince1970: ((Date().timeIntervalSince1970 / day).rounded(.down) - 30) * day)

    private static func at(hours: Int) -> Date { base.addingTimeInterval(Double(hours) * 3600) }

    private func pending(_ s: TestStores, _ project: Project) throws -> Int {
        try s.count("SELECT count(*) FROM purchase_changes WHERE project_id = \(project.id)")
    }

    private func deriveAll(_ store: PostgresWebhookStore, _ project: Project, limit: Int = 500) throws {
        while try store.deriveChanges(projectId: project.id, limit: limit) > 0 {}
    }

    private static let products: [(String, ProductType)] = [
        ("pro.monthly", .autoRenewable), ("pro.yearly", .autoRenewable), ("coins", .consumable),
        ("lifetime", .nonConsumable), ("pro.trial", .autoRenewable),
    ]

    private static func payload(_ id: String, price: Int?, currency: String?, trial: Bool) -> String {
        var payload = #"{"transactionId": "\#(id)""#
        if let price { payload += #", "price": \#(price)"# }
        if let currency { payload += #", "currency": "\#(currency)""# }
        if trial { payload += #", "offerDiscountType": "FREE_TRIAL""# }
        return payload + "}"
    }

    /// Records a random workload, deriving in random batches as it goes: new purchases (a trial product starts with
    /// a 7-day free trial at price 0), renewals at the previous expiry, refunds (some dated before the purchase),
    /// later signatures that move the expiry and the price, re-posts. Starts on whole hours, so some fall on
    /// midnights.
    private func record(_ s: TestStores, _ store: PostgresWebhookStore, _ project: Project, seed: UInt64,
                        count: Int, underEarlierSchema: Bool = false) throws {
        var random = SplitMix64(state: seed)
        var recorded: [TransactionFacts] = []
        for n in 0..<count {
            let choice = random.next(10)
            var t: TransactionFacts
            if choice < 4 || recorded.isEmpty {
                let product = random.next(Self.products.count)
                let (productId, type) = Self.products[product]
                let start = Self.at(hours: random.next(35 * 24))
                let hours = product == 4 ? 7 * 24 : 24 * (product == 1 ? 365 : 30) + random.next(24)
                let id = "\(seed)-\(n)"
                t = TransactionFacts(
                    transactionId: id, originalTransactionId: id, productId: productId, type: type,
                    environment: random.next(3) == 0 ? .sandbox : .production, purchaseDate: start,
                    originalPurchaseDate: start,
                    expiresDate: type == .autoRenewable ? start.addingTimeInterval(Double(hours) * 3600) : nil,
                    revocationDate: nil, revocationReason: nil, appAccountToken: nil, ownershipType: .purchased,
                    signedDate: start,
                    payloadJSON: Self.payload(id, price: product == 4 ? 0 : random.next(5) == 0 ? nil : 990 * (1 + random.next(3)),
                                              currency: [nil, "USD", "EUR", ""][random.next(4)], trial: product == 4))
            } else {
                let previous = recorded[random.next(recorded.count)]
                t = previous
                t.signedDate = previous.signedDate.addingTimeInterval(Double(1 + random.next(3)) * 3600)
                switch choice {
                case 4, 5, 6:  // a renewal of the same purchase, starting at the previous expiry, paid
                    guard previous.type == .autoRenewable, let expires = previous.expiresDate else { continue }
                    t.transactionId = "\(seed)-\(n)"
                    t.purchaseDate = expires
                    t.expiresDate = expires.addingTimeInterval(30 * Self.day + Double(random.next(24)) * 3600)
                    t.signedDate = expires
                    t.payloadJSON = Self.payload(t.transactionId, price: 990 * (1 + random.next(3)),
                                                 currency: ["USD", "EUR"][random.next(2)], trial: false)
                case 7:  // a refund, now and then dated before the purchase
                    t.revocationDate = previous.purchaseDate.addingTimeInterval(Double(random.next(96) - 24) * 3600)
                    t.revocationReason = 0
                case 8:  // signed again with other facts: a moved expiry and another price
                    t.expiresDate = previous.expiresDate?.addingTimeInterval(Double(random.next(48)) * 3600)
                    t.payloadJSON = Self.payload(t.transactionId, price: random.next(5000), currency: "USD",
                                                 trial: previous.payloadJSON.contains("FREE_TRIAL"))
                default:  // re-posted as it was
                    t = previous
                }
            }
            let user: String? = random.next(3) == 0 ? nil : "user\(random.next(5))"
            if underEarlierSchema {
                try recordUnderEarlierSchema(s.pool, t, userId: user, project: project, now: t.signedDate)
            } else {
                _ = try s.purchases.recordTransaction(t, userId: user, deviceId: nil, project: project, now: t.signedDate)
            }
            recorded.append(t)
            if random.next(7) == 0 {
                _ = try store.deriveChanges(projectId: project.id, limit: 1 + random.next(5))
            }
        }
    }

    /// The "now"s compared: the clock, today's midnight and a second after it, a past instant within a day (its
    /// instants pruned: read from the tables), a past midnight, a future instant.
    private static var nows: [Date] {
        let today = base.addingTimeInterval(30 * day)
        return [Date(), today, today.addingTimeInterval(1), base.addingTimeInterval(3.5 * day + 17),
                base.addingTimeInterval(10 * day), today.addingTimeInterval(3 * day + 5 * 3600)]
    }

    /// Ranges in days from `base` (`to` exclusive): up to today, the last days, today alone, the past, before the
    /// data, into the future.
    private static let ranges: [(Int, Int)] = [(0, 31), (25, 31), (30, 31), (10, 15), (-40, 0), (28, 36), (-300, 40)]

    private func assertOverviewIsTheSpecification(_ s: TestStores, _ project: Project, all: Bool = true,
                                                  file: StaticString = #filePath, line: UInt = #line) throws {
        let store = PostgresOverviewMetricsStore(pool: s.pool)
        let specification = OverviewSpecification(pool: s.pool)
        let nows = all ? Self.nows : [Self.nows[0], Self.nows[3]]
        let ranges = all ? Self.ranges : [Self.ranges[0], Self.ranges[5]]
        for now in nows {
            for (from, to) in ranges {
                for environment in [nil, StoreEnvironment.production, .sandbox] {
                    let range = OverviewRange(from: Self.base.addingTimeInterval(Double(from) * Self.day),
                                              to: Self.base.addingTimeInterval(Double(to) * Self.day))
                    let expected = try specification.overview(projectId: project.id, range: range,
                                                              environment: environment, now: now)
                    let actual = try store.overview(projectId: project.id, range: range, environment: environment,
                                                    now: now)
                    XCTAssertEqual(actual, expected, "now \(now), days \(from)..<\(to), \(environment?.rawValue ?? "all")",
                                   file: file, line: line)
                }
            }
        }
    }

    /// Products mapped to entitlements, so the entitlement counts weigh them.
    private func mapProducts(_ s: TestStores, _ project: Project) throws {
        for (product, entitlements) in [("pro.monthly", ["pro"]), ("pro.yearly", ["pro", "no_ads"]),
                                        ("lifetime", ["pro", "no_ads", "themes"]), ("pro.trial", ["pro"])] {
            _ = try s.projects.setProduct(projectId: project.id,
                                          ProductMapping(productId: product, entitlements: entitlements), now: Fixtures.t0)
        }
    }

    func testOverviewEqualsTheSpecificationOnRandomDataWithAndWithoutAWebhook() throws {
        let s = try TestStores.make(label: "rollup")
        defer { s.close() }
        let store = PostgresWebhookStore(pool: s.pool)
        let plain = try s.makeProject(1)
        let hooked = try s.makeProject(2)
        let other = try s.makeProject(3)
        for project in [plain, hooked, other] { try mapProducts(s, project) }
        try record(s, store, hooked, seed: 7, count: 60)
        // Created midway: the seed consumes the pending rows; they still count.
        _ = try store.upsertEndpoint(projectId: hooked.id, url: "https://h.example/x", events: nil,
                                     secret: PurchaseChangesTests.sealed, now: Fixtures.t0)
        try record(s, store, hooked, seed: 8, count: 60)
        try record(s, store, plain, seed: 9, count: 250)
        try record(s, store, other, seed: 10, count: 40)
        // Some rows still pending: the overview adds them.
        XCTAssertGreaterThan(try pending(s, plain), 0)
        try assertOverviewIsTheSpecification(s, plain)
        try assertOverviewIsTheSpecification(s, hooked, all: false)
        try deriveAll(store, plain, limit: 3)
        try deriveAll(store, hooked, limit: 7)
        XCTAssertEqual(try pending(s, plain), 0)
        try assertOverviewIsTheSpecification(s, plain)
        try assertOverviewIsTheSpecification(s, hooked)
        try assertOverviewIsTheSpecification(s, other, all: false)
        // The workload exercised every column, trial conversions, and kept today's instants.
        let sums = try s.rows("""
            SELECT concat_ws(' ', sum(renewals) > 0, sum(ends) > 0, sum(refunds) > 0, sum(priced) > 0,
                sum(starts) > 0, sum(new_purchases) > 0, sum(end_subs) > 0, sum(stops) > 0, sum(expirations) > 0,
                bool_or(mrr_n <> 0), bool_or(midnight), bool_or(currency_null),
                bool_or(currency = '' AND NOT currency_null)) AS r FROM overview_days WHERE project_id = \(plain.id)
            """).first?.decode("r", as: String.self)
        XCTAssertEqual(sums, "t t t t t t t t t t t t t")
        XCTAssertGreaterThan(try s.count("SELECT count(*) FROM overview_trials WHERE project_id = \(plain.id) AND n = 1"), 0)
        XCTAssertGreaterThan(try s.count("SELECT count(*) FROM overview_instants WHERE project_id = \(plain.id)"), 0)
        let range = OverviewRange(from: Self.base, to: Self.base.addingTimeInterval(31 * Self.day))
        let metrics = try PostgresOverviewMetricsStore(pool: s.pool).overview(projectId: plain.id, range: range,
                                                                              environment: nil, now: Date())
        XCTAssertGreaterThan(metrics.days.map(\.trialConversions).reduce(0, +), 0)
        XCTAssertGreaterThan(metrics.days.map(\.expirations).reduce(0, +), 0)
        XCTAssertFalse(metrics.mrr.isEmpty)
        // Nothing the deriver keeps is left over: no trial at a net count but 0 or 1, no instant before yesterday.
        XCTAssertEqual(try s.count("SELECT count(*) FROM overview_trials WHERE n NOT IN (1)"), 0)
        XCTAssertEqual(try s.count("""
            SELECT count(*) FROM overview_instants
            WHERE at < (date_trunc('day', now() AT TIME ZONE 'UTC') - interval '1 day') AT TIME ZONE 'UTC'
            """), 0)
    }

    /// A deriver that dies after rolling up and deleting, before its commit (its transaction rolled back, or its
    /// backend terminated, as a kill -9 of the server leaves it): nothing it did stays, and the next one counts each
    /// change once.
    func testOverviewIsExactlyOnceAcrossADeriverThatDiesBeforeItsCommit() throws {
        let s = try TestStores.make(label: "rollupcrash")
        defer { s.close() }
        let store = PostgresWebhookStore(pool: s.pool)
        let project = try s.makeProject()
        try mapProducts(s, project)
        try record(s, store, project, seed: 11, count: 120)
        let logged = try pending(s, project)
        XCTAssertGreaterThan(logged, 0)
        let rows = try s.count("SELECT count(*) FROM overview_days WHERE project_id = \(project.id)")
        try s.pool.withConnection { c in
            _ = try c.execute("BEGIN")
            _ = try c.query("SELECT bouncer_derive_changes(\(project.id), 1000)")
            XCTAssertEqual(try c.query("SELECT count(*) AS n FROM purchase_changes WHERE project_id = \(project.id)")
                .first?.decode("n", as: Int.self), 0)
            _ = try c.execute("ROLLBACK")
        }
        XCTAssertEqual(try pending(s, project), logged)
        XCTAssertEqual(try s.count("SELECT count(*) FROM overview_days WHERE project_id = \(project.id)"), rows)
        // Terminated from another session in the middle of its transaction.
        let victim = try Connection(settings: s.pool.settings)
        _ = try victim.execute("BEGIN")
        _ = try victim.query("SELECT bouncer_derive_changes(\(project.id), 1000)")
        let pid = try XCTUnwrap(victim.query("SELECT pg_backend_pid() AS p").first).decode("p", as: Int.self)
        _ = try s.rows("SELECT pg_terminate_backend(\(Int64(pid))::int)")
        XCTAssertThrowsError(try victim.execute("COMMIT"))
        XCTAssertEqual(try pending(s, project), logged)
        XCTAssertEqual(try s.count("SELECT count(*) FROM overview_days WHERE project_id = \(project.id)"), rows)
        try assertOverviewIsTheSpecification(s, project, all: false)
        // The restarted deriver consumes each row once; a second pass finds nothing.
        try deriveAll(store, project)
        try assertOverviewIsTheSpecification(s, project)
        try deriveAll(store, project)
        try assertOverviewIsTheSpecification(s, project, all: false)
    }

    /// 0035 backfills the rollups from the tables already stored; their pending log rows (written without tx by the
    /// functions of their time) add nothing, and later changes arrive through the log.
    func testMigrationBackfillsTheRollupsFromExistingTransactions() throws {
        let settings = try TestDatabase.create(label: "rollupbackfill")
        let pool = ConnectionPool(settings: settings, configuration: .init(size: 2))
        defer { pool.shutdown() }
        try Migrator(pool: pool, migrations: Migration.embedded.filter { $0.version < 35 }).migrate()
        let s = TestStores(pool: pool, projects: PostgresProjectStore(pool: pool),
                           purchases: PostgresPurchaseStore(pool: pool))
        let store = PostgresWebhookStore(pool: pool)
        let project = try Fixtures.insertProjectRows(pool)
        try mapProducts(s, project)
        try record(s, store, project, seed: 21, count: 100, underEarlierSchema: true)
        XCTAssertGreaterThan(try pending(s, project), 0)
        XCTAssertEqual(try Migrator(pool: pool).migrate(), Migration.embedded.map(\.version).filter { $0 >= 35 })
        try assertOverviewIsTheSpecification(s, project)
        try record(s, store, project, seed: 22, count: 60)
        try deriveAll(store, project)
        try assertOverviewIsTheSpecification(s, project)
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
        let range = OverviewRange(from: Fixtures.at(-2).addingTimeInterval(-Fixtures.t0.timeIntervalSince1970.truncatingRemainder(dividingBy: 86_400)),
                                  to: Fixtures.at(40).addingTimeInterval(-Fixtures.t0.timeIntervalSince1970.truncatingRemainder(dividingBy: 86_400)))
        for now in [Fixtures.at(1), Fixtures.at(45), Date()] {
            XCTAssertEqual(try PostgresOverviewMetricsStore(pool: s.pool).overview(projectId: project.id, range: range,
                                                                                    environment: nil, now: now),
                           try OverviewSpecification(pool: s.pool).overview(projectId: project.id, range: range,
                                                                             environment: nil, now: now))
        }
        XCTAssertEqual(try s.count("""
            SELECT sum(starts)::int8 FROM overview_days WHERE project_id = \(project.id)
            """), 5)
    }
}
