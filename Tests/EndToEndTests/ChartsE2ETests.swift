import Foundation
import JSON
import TestSupport
import XCTest

/// Revenue truth (issue 26) against the real `bouncer serve`: a scenario of signed purchases, renewals, an upgrade, a
/// trial that converts and one that does not, a full and a prorated refund, three currencies (one without a rate) and
/// a subscriber past one year of paid service; every chart value asserted against the figures computed by hand below.
final class ChartsE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "charts" }

    /// Milliseconds since 1970 of `2025-01-05T12:00:00Z`-style text.
    static func at(_ text: String) -> Int64 {
        let f = ISO8601DateFormatter()
        return Int64((f.date(from: text) ?? Date(timeIntervalSince1970: 0)).timeIntervalSince1970 * 1000)
    }

    struct Period {
        var start: String
        var end: String
        var price: Int64
        var currency: String = "USD"
        var product = "com.e2e.pro.monthly"
        var trial = false
        var refund: (date: String, type: String, percentage: Int64?)?
    }

    /// Posts one purchase's transactions in order (the first is the original), as `user`.
    private func post(_ api: API, _ tenant: Tenant, _ user: String, _ periods: [Period]) throws {
        var original: String?
        for period in periods {
            var p = TransactionPayload(bundleId: tenant.bundleId, originalTransactionId: original)
            original = original ?? p.transactionId
            p.productId = period.product
            p.purchaseDate = Self.at(period.start)
            p.originalPurchaseDate = Self.at(periods[0].start)
            p.expiresDate = Self.at(period.end)
            p.extra = [("price", JSONValue(period.price)), ("currency", .string(period.currency))]
            if period.trial { p.extra.append(("offerDiscountType", "FREE_TRIAL")) }
            if let refund = period.refund {
                p.revocationDate = Self.at(refund.date)
                p.revocationReason = 0
                p.revocationType = refund.type
                p.revocationPercentage = refund.percentage
            }
            let r = try api.postReceipt(tenant.publicKey, try p.mint(), user: user)
            XCTAssertEqual(r.status, 201, r.description)
        }
    }

    func chart(_ tenant: Tenant, _ name: String, _ query: String) throws -> JSONValue {
        let r = try api.client.get("/v1/admin/projects/\(tenant.id)/charts/\(name)?\(query)", headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        return try r.json()
    }

    /// The points' values of `measures`, one array per point (ratios as their text, null as "null").
    func table(_ json: JSONValue, _ measures: [String]) -> [[String]] {
        (json["points"]?.arrayValue ?? []).map { point in
            measures.map { point[$0].map { $0.stringValue ?? $0.description } ?? "absent" }
        }
    }

    private func totals(_ json: JSONValue, _ measures: [String]) -> [String] {
        measures.map { json["totals"]?[$0].map { $0.stringValue ?? $0.description } ?? "absent" }
    }

    /// The charts answered from the deriver's roll-ups unfiltered and by the sweep under a filter, with the columns
    /// that must be equal.
    static let bothPaths = [("active_subscriptions", ["date", "active_subscriptions"]),
                            ("churn", ["date", "active_at_start", "churned"]),
                            ("mrr", ["date", "mrr_milli", "subscriptions"]),
                            ("mrr_movement", ["date", "new_milli", "expansion_milli", "contraction_milli",
                                              "churned_milli", "reactivation_milli"]),
                            ("subscription_retention", ["date", "subscribers"]
                                + (0...12).flatMap { ["reached_\($0)", "retained_\($0)"] }),
                            ("realized_ltv", ["date", "customers", "net_milli", "net_per_customer_milli"])]

    /// Each point's amounts without a rate, as text.
    static func unconverted(_ json: JSONValue) -> [String] {
        (json["points"]?.arrayValue ?? []).map { $0["unconverted"]?.description ?? "absent" }
    }

    /// Asks the deriver to roll up every purchase of the tenant again through the log (0062's backfill rows), and
    /// waits until it has.
    func replayRevenue(_ tenant: Tenant) throws {
        _ = try db.query("""
            INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
            SELECT DISTINCT t.project_id, t.environment, t.original_transaction_id, '{"tx": {"revenue": "all"}}'::jsonb, now()
            FROM transactions t WHERE t.project_id = \(tenant.id)::uuid RETURNING 1
            """)
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })
    }

    /// Rebuilds the project's revenue roll-ups as an operator would: every one of them removed (revenue_transactions
    /// and the tables derived beside it, schema/0062 to 0087), then the log replayed.
    func rebuildRevenue(_ tenant: Tenant) throws {
        for table in ["revenue_transactions", "revenue_days", "revenue_runs", "revenue_run_days", "revenue_values",
                      "revenue_value_days", "revenue_cohorts", "revenue_ltv_purchases", "revenue_ltv_customers",
                      "revenue_ltv_days", "revenue_movement_days"] {
            _ = try db.query("DELETE FROM \(unsafeSQL: table) WHERE project_id = \(tenant.id)::uuid RETURNING 1")
        }
        try replayRevenue(tenant)
    }

    /// Stores each day's USD rate for one EUR; answers the responses.
    func putEuroRates(_ api: API, _ rates: [(date: String, usd: String)]) throws -> [HTTPResponse] {
        try rates.map { date, usd in
            let r = try api.client.send("PUT", "/v1/admin/exchange-rates",
                                        json: ["date": .string(date), "base": "EUR", "rates": ["USD": .string(usd)]],
                                        headers: E2E.admin)
            XCTAssertEqual(r.status, 200, r.description)
            return r
        }
    }

    func testScenarioChartsAreExact() throws {
        let api = try api
        let tenant = try api.createProject()
        // Rates: 1 EUR = 1.1 USD from January, 1.2 from February; no GBP rate.
        let rates = [("2025-01-01", "1.1"), ("2025-02-01", "1.2")]
        for (r, (date, _)) in zip(try putEuroRates(api, rates), rates) {
            XCTAssertEqual(try r.json(), ["date": .string(date), "base": "EUR", "stored": 1])
            try AuditLogE2ETests.assertAudited(db, method: "PUT", template: "/v1/admin/exchange-rates", r)
        }
        // A: USD monthly, renewed twice; the third period fully refunded on 03-10.
        try post(api, tenant, "a", [
            Period(start: "2025-01-05T12:00:00Z", end: "2025-02-05T12:00:00Z", price: 9990),
            Period(start: "2025-02-05T12:00:00Z", end: "2025-03-05T12:00:00Z", price: 9990),
            Period(start: "2025-03-05T12:00:00Z", end: "2025-04-05T12:00:00Z", price: 9990,
                   refund: ("2025-03-10T12:00:00Z", "REFUND_FULL", nil)),
        ])
        // B: EUR monthly; the renewal refunded 50 % on 02-20 (a prorated refund keeps access to 03-10).
        try post(api, tenant, "b", [
            Period(start: "2025-01-10T12:00:00Z", end: "2025-02-10T12:00:00Z", price: 4990, currency: "EUR"),
            Period(start: "2025-02-10T12:00:00Z", end: "2025-03-10T12:00:00Z", price: 4990, currency: "EUR",
                   refund: ("2025-02-20T12:00:00Z", "REFUND_PRORATED", 50_000)),
        ])
        // C: a free trial that converts, then an upgrade to the yearly plan on 02-15.
        try post(api, tenant, "c", [
            Period(start: "2025-01-20T12:00:00Z", end: "2025-01-27T12:00:00Z", price: 0, trial: true),
            Period(start: "2025-01-27T12:00:00Z", end: "2025-02-27T12:00:00Z", price: 9990),
            Period(start: "2025-02-15T12:00:00Z", end: "2026-02-15T12:00:00Z", price: 59_990,
                   product: "com.e2e.pro.yearly"),
        ])
        // D: a free trial that does not convert.
        try post(api, tenant, "d", [Period(start: "2025-02-03T12:00:00Z", end: "2025-02-10T12:00:00Z", price: 0,
                                           trial: true)])
        // E: GBP, which has no rate: reported apart.
        try post(api, tenant, "e", [Period(start: "2025-03-02T12:00:00Z", end: "2025-04-02T12:00:00Z", price: 3990,
                                           currency: "GBP")])
        // F: 2.000 USD a month since 2024-02-01: 335 paid days before January's renewal (30 %), 366 before
        // February's (15 %); it lapses on 03-01.
        let months = ["2024-02", "2024-03", "2024-04", "2024-05", "2024-06", "2024-07", "2024-08", "2024-09", "2024-10",
                      "2024-11", "2024-12", "2025-01", "2025-02", "2025-03"]
        try post(api, tenant, "f", (0..<13).map {
            Period(start: months[$0] + "-01T12:00:00Z", end: months[$0 + 1] + "-01T12:00:00Z", price: 2000)
        })
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })
        let stored = try db.count("revenue_transactions", project: tenant.id)
        XCTAssertEqual(stored, 3 + 2 + 3 + 1 + 1 + 13)

        // 0062's backfill path (a log row asking for all of a purchase) rebuilds exactly the rows the receipts'
        // incremental roll-ups wrote.
        let snapshot = """
            SELECT string_agg(v::text, E'\\n' ORDER BY v.transaction_id) AS rows FROM revenue_transactions v
            WHERE v.project_id = 
            """
        func rows() throws -> String {
            try XCTUnwrap(try db.query("\(unsafeSQL: snapshot) \(tenant.id)::uuid").first?.decode("rows", as: String.self))
        }
        // The daily roll-up (0072, moved by the roll-up's own statements since 0078) follows every write, removal
        // included: the same rows after the rebuild, and the
        // day of each sale and refund as the transactions say (B's half refund, A's full one; F's renewals at 30 %
        // then, from 2025-02-01, 15 %).
        func days() throws -> [String] {
            try db.query("""
                SELECT day::text || ' ' || kind || ' ' || currency || ' ' || price_milli || ' ' || tier || ' '
                    || refund_milli_percent || ' ' || n || ' ' || refunded AS r
                FROM revenue_days WHERE project_id = \(tenant.id)::uuid ORDER BY day, kind, currency, price_milli
                """).map { try $0.decode("r", as: String.self) }
        }
        // The runs of paid service (0078) and their days, as text, for the same comparison.
        func runs() throws -> [String] {
            try db.query("""
                SELECT 'r ' || environment || ' ' || original_transaction_id || ' ' || starts_at::text || ' '
                    || ends_at::text || ' ' || COALESCE(next_starts_at::text, '-') || ' ' || COALESCE(next_ends_at::text, '-') AS r
                FROM revenue_runs WHERE project_id = \(tenant.id)::uuid
                UNION ALL
                SELECT 'd ' || environment || ' ' || day::text || ' ' || starts || ' ' || ends
                FROM revenue_run_days WHERE project_id = \(tenant.id)::uuid
                UNION ALL
                SELECT 'v ' || environment || ' ' || original_transaction_id || ' ' || starts_at::text || ' '
                    || ends_at::text || ' ' || currency || ' ' || monthly_milli || ' ' || paid_since::text
                FROM revenue_values WHERE project_id = \(tenant.id)::uuid
                UNION ALL
                SELECT 'w ' || environment || ' ' || day::text || ' ' || currency || ' ' || monthly_milli || ' ' || n
                FROM revenue_value_days WHERE project_id = \(tenant.id)::uuid ORDER BY 1
                """).map { try $0.decode("r", as: String.self) }
        }
        let rolledUp = try days()
        let runsRolledUp = try runs()
        // A, B, C, E and F each one run (C's trial is not paid service; its upgrade continues the run).
        XCTAssertEqual(runsRolledUp.filter { $0.hasPrefix("r ") }.count, 5)
        // The spans of MRR (0085): C's monthly price, then its yearly's twelfth from the upgrade; F's renewals joined
        // into one span.
        let c = try XCTUnwrap(runsRolledUp.first { $0.hasPrefix("v ") && $0.contains(" 2025-01-27 12:00:00+00 ") })
        XCTAssertTrue(c.hasSuffix(" 2025-02-15 12:00:00+00 USD 9990 2025-01-27 12:00:00+00"), c)
        XCTAssertEqual(runsRolledUp.filter { $0.hasPrefix("v ") }.count, 6)
        XCTAssertTrue(runsRolledUp.contains { $0.hasSuffix(" 2024-02-01 12:00:00+00 2025-03-01 12:00:00+00 USD 2000 2024-02-01 12:00:00+00") })
        XCTAssertEqual(rolledUp.filter { $0.split(separator: " ")[1] == "1" },
                       ["2025-02-20 1 EUR 4990 30 50000 1 0", "2025-03-10 1 USD 9990 30 100000 1 0"])
        XCTAssertEqual(rolledUp.filter { $0.hasPrefix("2025-01-01 0") || $0.hasPrefix("2025-02-01 0") },
                       ["2025-01-01 0 USD 2000 30 0 1 0", "2025-02-01 0 USD 2000 15 0 1 0"])
        XCTAssertEqual(rolledUp.filter { $0.hasPrefix("2025-03-05 0") }, ["2025-03-05 0 USD 9990 30 0 1 1"])
        let incremental = try rows()
        // A rebuild removes the project's roll-ups (no trigger on revenue_transactions: schema/0078) and replays.
        _ = try db.query("DELETE FROM revenue_transactions WHERE project_id = \(tenant.id)::uuid RETURNING 1")
        XCTAssertEqual(try days().count, rolledUp.count)
        _ = try db.query("DELETE FROM revenue_days WHERE project_id = \(tenant.id)::uuid RETURNING 1")
        _ = try db.query("DELETE FROM revenue_runs WHERE project_id = \(tenant.id)::uuid RETURNING 1")
        _ = try db.query("DELETE FROM revenue_run_days WHERE project_id = \(tenant.id)::uuid RETURNING 1")
        _ = try db.query("DELETE FROM revenue_values WHERE project_id = \(tenant.id)::uuid RETURNING 1")
        _ = try db.query("DELETE FROM revenue_value_days WHERE project_id = \(tenant.id)::uuid RETURNING 1")
        for table in ["revenue_ltv_purchases", "revenue_ltv_customers", "revenue_ltv_days", "revenue_movement_days"] {
            _ = try db.query("DELETE FROM \(unsafeSQL: table) WHERE project_id = \(tenant.id)::uuid RETURNING 1")
        }
        XCTAssertEqual(try days(), [])
        XCTAssertEqual(try runs(), [])
        try replayRevenue(tenant)
        XCTAssertEqual(try rows(), incremental)
        XCTAssertEqual(try days(), rolledUp)
        XCTAssertEqual(try runs(), runsRolledUp)

        let range = "from=2025-01-01&to=2025-03-31&interval=month"
        // Revenue. Proceeds at 30 % (F's February renewal at 15 %), EUR at its day's rate, each amount rounded once:
        // Jan: gross 9990 + 4990×1.1 (5489) + 9990 + 2000 = 27469; proceeds 6993 + 3493×1.1 (3842) + 6993 + 1400.
        // Feb: gross 9990 + 4990×1.2 (5988) + 59990 + 2000 = 77968; proceeds 6993 + 3493×1.2 (4192) + 41993 + 1700;
        //      refunds: half of B's renewal, 2495×1.2 = 2994; its proceeds' half 1747×1.2 = 2096: net 54878 − 2096.
        // Mar: A's third period 9990 sold and refunded: net 0. E's 3.990 GBP apart (proceeds 2793).
        let revenue = try chart(tenant, "revenue", range)
        XCTAssertEqual(revenue["currency"], "USD")
        XCTAssertEqual(revenue["small_business_program"], false)
        XCTAssertNotNil(revenue["fresh_as_of"]?.stringValue)
        let money = ["date", "gross_milli", "proceeds_milli", "refunds_milli", "net_milli"]
        XCTAssertEqual(table(revenue, money), [
            ["2025-01-01", "27469", "19228", "0", "19228"],
            ["2025-02-01", "77968", "54878", "2994", "52782"],
            ["2025-03-01", "9990", "6993", "9990", "0"],
        ])
        XCTAssertEqual(revenue["points"]?[2]?["unconverted"], ["GBP": ["gross_milli": 3990, "proceeds_milli": 2793,
                                                                       "refunds_milli": 0, "net_milli": 2793]])
        XCTAssertEqual(revenue["points"]?[0]?["unconverted"], .object([:]))
        XCTAssertEqual(totals(revenue, Array(money.dropFirst())), ["115427", "81099", "12984", "72010"])
        XCTAssertEqual(revenue["totals"]?["unconverted"]?["GBP"]?["net_milli"], 2793)

        // The CSV is the same table.
        let csv = try api.client.get("/v1/admin/projects/\(tenant.id)/charts/revenue?\(range)&format=csv", headers: E2E.admin)
        XCTAssertEqual(csv.status, 200)
        XCTAssertEqual(csv.header("Content-Type"), "text/csv; charset=utf-8")
        XCTAssertEqual(String(decoding: csv.body, as: UTF8.self),
                       "date,currency,gross_milli,proceeds_milli,refunds_milli,net_milli\r\n"
                       + "2025-01-01,USD,27469,19228,0,19228\r\n2025-02-01,USD,77968,54878,2994,52782\r\n"
                       + "2025-03-01,USD,9990,6993,9990,0\r\n2025-03-01,GBP,3990,2793,0,2793\r\n"
                       + "total,USD,115427,81099,12984,72010\r\ntotal,GBP,3990,2793,0,2793\r\n")

        // MRR at each month's end: Feb 1: A 9990, B 4990 EUR × 1.2 = 5988, C 9990, F 2000. Mar 1: A 9990, B 5988,
        // C's yearly 59990 / 12 = 4999, F 2000. Apr 1: C 4999; E 3990 GBP apart.
        let mrr = try chart(tenant, "mrr", range)
        XCTAssertEqual(table(mrr, ["mrr_milli", "subscriptions"]), [["27968", "4"], ["22977", "4"], ["4999", "1"]])
        XCTAssertEqual(mrr["points"]?[2]?["unconverted"], ["GBP": ["mrr_milli": 3990, "subscriptions": 1]])
        XCTAssertEqual(totals(mrr, ["mrr_milli", "subscriptions"]), ["4999", "1"])

        // Movement, start against end of each month (at the end's rate): Jan: A, B (5988), C new; Feb: C's upgrade
        // 9990 → 4999 a contraction of 4991; Mar: A, B (at February's rate, the latest on 04-01: 5988) and F
        // churned, E new in GBP.
        let movement = try chart(tenant, "mrr_movement", range)
        let moves = ["new_milli", "expansion_milli", "contraction_milli", "churned_milli", "reactivation_milli"]
        XCTAssertEqual(table(movement, moves), [
            ["25968", "0", "0", "0", "0"], ["0", "0", "4991", "0", "0"], ["0", "0", "0", "17978", "0"],
        ])
        XCTAssertEqual(movement["points"]?[2]?["unconverted"]?["GBP"]?["new_milli"], 3990)
        XCTAssertEqual(totals(movement, moves), ["25968", "0", "4991", "17978", "0"])

        XCTAssertEqual(table(try chart(tenant, "active_subscriptions", range), ["active_subscriptions"]),
                       [["4"], ["4"], ["2"]])
        XCTAssertEqual(table(try chart(tenant, "active_trials", range), ["active_trials"]), [["0"], ["0"], ["0"]])
        XCTAssertEqual(table(try chart(tenant, "active_trials", "from=2025-02-09&to=2025-02-10"),
                             ["date", "active_trials"]), [["2025-02-09", "1"], ["2025-02-10", "0"]])

        // Churn: Jan 0 of 1 (F), Feb 0 of 4, Mar 3 of 4 (A, B, F); totals 3 of 9.
        let churn = try chart(tenant, "churn", range)
        XCTAssertEqual(table(churn, ["active_at_start", "churned", "churn_rate"]),
                       [["1", "0", "0.0000"], ["4", "0", "0.0000"], ["4", "3", "0.7500"]])
        XCTAssertEqual(totals(churn, ["active_at_start", "churned", "churn_rate"]), ["9", "3", "0.3333"])
        // Unfiltered, both read the runs of paid service (schema/0078); under a filter (every purchase here is in the
        // USA storefront) the sweep over the periods: the same values day by day, week by week, and up to now.
        for query in ["from=2024-12-28&to=2025-04-05&interval=day", "from=2024-12-01&to=2025-04-30&interval=week",
                      range] {
            for (name, columns) in Self.bothPaths {
                let runs = try chart(tenant, name, query)
                let swept = try chart(tenant, name, query + "&country=USA")
                XCTAssertEqual(table(runs, columns), table(swept, columns), "\(name) \(query)")
                XCTAssertEqual(Self.unconverted(runs), Self.unconverted(swept), "\(name) \(query)")
                XCTAssertFalse(table(runs, columns).isEmpty)
            }
        }

        // Trials by start month: C's converted, D's did not.
        let trials = try chart(tenant, "trial_conversion", range)
        XCTAssertEqual(table(trials, ["trials", "conversions", "conversion_rate"]),
                       [["1", "1", "1.0000"], ["1", "0", "0.0000"], ["0", "0", "null"]])
        XCTAssertEqual(totals(trials, ["trials", "conversions", "conversion_rate"]), ["2", "1", "0.5000"])

        // Refund rate by purchase month: B's renewal of February's 4, A's third of March's 2.
        let refunds = try chart(tenant, "refund_rate", range)
        XCTAssertEqual(table(refunds, ["transactions", "refunded", "refund_rate"]),
                       [["4", "0", "0.0000"], ["4", "1", "0.2500"], ["2", "1", "0.5000"]])
        XCTAssertEqual(totals(refunds, ["transactions", "refunded", "refund_rate"]), ["10", "2", "0.2000"])

        // Retention by month of first payment (every month since has begun by now, in 2026): January's cohort is A
        // (01-05), B (01-10), C (01-27, its trial's conversion); February's none (D's trial never paid, F's first
        // payment was in 2024); March's E. Month 2: A's refunded third period still overlaps [03-05, 04-05) until
        // its revocation, B's access ended 03-10, its month 2 began then; from month 3 only C's yearly plan.
        let retention = try chart(tenant, "subscription_retention", range)
        let since = Array(0...12)
        let retentionColumns = ["subscribers"] + since.flatMap { ["reached_\($0)", "retained_\($0)"] }
        XCTAssertEqual(table(retention, retentionColumns), [
            ["3"] + since.flatMap { ["3", $0 < 2 ? "3" : $0 == 2 ? "2" : "1"] },
            ["0"] + since.flatMap { _ in ["0", "0"] },
            ["1"] + since.flatMap { ["1", $0 == 0 ? "1" : "0"] },
        ])
        XCTAssertEqual(table(retention, ["retention_0", "retention_1", "retention_2", "retention_3", "retention_12"]),
                       [["1.0000", "1.0000", "0.6667", "0.3333", "0.3333"], ["null", "null", "null", "null", "null"],
                        ["1.0000", "0.0000", "0.0000", "0.0000", "0.0000"]])
        XCTAssertEqual(totals(retention, ["subscribers", "reached_0", "retained_0", "retained_1", "retained_2",
                                          "retained_3", "retained_12"]), ["4", "4", "4", "3", "2", "1", "1"])
        XCTAssertEqual(totals(retention, ["retention_0", "retention_1", "retention_2", "retention_12"]),
                       ["1.0000", "0.7500", "0.5000", "0.2500"])
        XCTAssertNil(retention["points"]?[0]?["unconverted"])
        // Under a product filter the cohort is that product's: C's yearly plan, first paid 02-15, paid to 2026-02-15
        // (month 11 is [2026-01-15, 2026-02-15); month 12 begins as it ends).
        let yearly = try chart(tenant, "subscription_retention", range + "&product_id=com.e2e.pro.yearly")
        XCTAssertEqual(table(yearly, ["subscribers", "retained_0", "retained_11", "retained_12"]),
                       [["0", "0", "0", "0"], ["1", "1", "1", "0"], ["0", "0", "0", "0"]])

        // Realized LTV: each customer's net since their first payment, to now, at each amount's day's rate.
        // January: a 3 × 6993 − 6993 refunded = 13986; b 3493 × 1.1 (3842) + 3493 × 1.2 (4192) − 1747 × 1.2 (2096)
        // = 5938; c 6993 + 41993 = 48986: 68910 for 3 customers. March: e, 2793 GBP without a rate, apart.
        let ltv = try chart(tenant, "realized_ltv", range)
        XCTAssertEqual(table(ltv, ["customers", "net_milli", "net_per_customer_milli"]),
                       [["3", "68910", "22970.0000"], ["0", "0", "null"], ["1", "0", "0.0000"]])
        XCTAssertEqual(ltv["points"]?[2]?["unconverted"], ["GBP": ["customers": 1, "net_milli": 2793,
                                                                   "net_per_customer_milli": "2793.0000"]])
        XCTAssertEqual(totals(ltv, ["customers", "net_milli", "net_per_customer_milli"]), ["4", "68910", "17227.5000"])
        let ltvCSV = try api.client.get("/v1/admin/projects/\(tenant.id)/charts/realized_ltv?\(range)&format=csv",
                                        headers: E2E.admin)
        XCTAssertEqual(ltvCSV.header("Content-Type"), "text/csv; charset=utf-8")
        // How fresh: every change is rolled up, so the answer's own time, in the JSON and in a header of either format.
        let rfc3339 = ISO8601DateFormatter()
        rfc3339.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let fresh = try XCTUnwrap(ltvCSV.header("Bouncer-Fresh-As-Of").flatMap(rfc3339.date))
        XCTAssertLessThan(abs(fresh.timeIntervalSinceNow), 60)
        let ltvJSON = try api.client.get("/v1/admin/projects/\(tenant.id)/charts/realized_ltv?\(range)", headers: E2E.admin)
        XCTAssertEqual(try ltvJSON.json()["fresh_as_of"]?.stringValue, ltvJSON.header("Bouncer-Fresh-As-Of"))
        XCTAssertEqual(String(decoding: ltvCSV.body, as: UTF8.self),
                       "date,currency,customers,net_milli,net_per_customer_milli\r\n"
                       + "2025-01-01,USD,3,68910,22970.0000\r\n2025-02-01,USD,0,0,\r\n2025-03-01,USD,1,0,0.0000\r\n"
                       + "2025-03-01,GBP,1,2793,2793.0000\r\ntotal,USD,4,68910,17227.5000\r\ntotal,GBP,1,2793,2793.0000\r\n")

        // Filters: the yearly product alone; another storefront; another environment.
        XCTAssertEqual(table(try chart(tenant, "revenue", range + "&product_id=com.e2e.pro.yearly"), ["gross_milli"]),
                       [["0"], ["59990"], ["0"]])
        XCTAssertEqual(totals(try chart(tenant, "revenue", range + "&country=FRA"), ["gross_milli"]), ["0"])
        XCTAssertEqual(totals(try chart(tenant, "revenue", range + "&environment=Production"), ["gross_milli"]), ["0"])
        XCTAssertEqual(totals(try chart(tenant, "revenue", range + "&country=USA&environment=Sandbox"), ["gross_milli"]),
                       ["115427"])

        // The Small Business Program: 15 % on every sale (January: 8491 + 4241 × 1.1 (4665) + 8491 + 1700), and EUR
        // as the reporting currency (USD at 1 / 1.1 in January: 9082 + 4990 + 9082 + 1818).
        let settings = try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/revenue-settings",
                                           json: ["small_business_program": true, "reporting_currency": "USD"],
                                           headers: E2E.admin)
        XCTAssertEqual(settings.status, 200, settings.description)
        try AuditLogE2ETests.assertAudited(db, method: "PUT", template: "/v1/admin/projects/{id}/revenue-settings", settings)
        XCTAssertEqual(try settings.json(), ["project_id": .string(tenant.id), "small_business_program": true,
                                             "reporting_currency": "USD"])
        XCTAssertEqual(table(try chart(tenant, "revenue", range), ["proceeds_milli"])[0], ["23347"])
        _ = try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/revenue-settings",
                                json: ["small_business_program": false, "reporting_currency": "EUR"], headers: E2E.admin)
        let euro = try chart(tenant, "revenue", range)
        XCTAssertEqual(euro["currency"], "EUR")
        XCTAssertEqual(table(euro, ["gross_milli"])[0], ["24972"])
    }

    /// MRR counts a purchase's latest period active at each instant: an upgrade refunded away early hands the
    /// purchase back to the monthly period it had replaced (the sweep takes such a purchase instant by instant).
    func testARefundedUpgradeHandsMRRBackToTheEarlierPeriod() throws {
        let api = try api
        let tenant = try api.createProject()
        try post(api, tenant, "u", [
            Period(start: "2025-01-01T12:00:00Z", end: "2025-02-01T12:00:00Z", price: 9990),
            Period(start: "2025-01-10T12:00:00Z", end: "2026-01-10T12:00:00Z", price: 59_990,
                   product: "com.e2e.pro.yearly", refund: ("2025-01-15T12:00:00Z", "REFUND_FULL", nil)),
        ])
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })
        let range = "from=2025-01-09&to=2025-01-16&interval=day"
        // At each day's end: the monthly 9990 until the yearly begins on the 10th (59990 / 12 = 4999), the monthly
        // again once the yearly is revoked on the 15th.
        XCTAssertEqual(table(try chart(tenant, "mrr", range), ["mrr_milli"]).map { $0[0] },
                       ["9990", "4999", "4999", "4999", "4999", "4999", "9990", "9990"])
        XCTAssertEqual(table(try chart(tenant, "mrr_movement", range), ["contraction_milli", "expansion_milli"]),
                       [["0", "0"], ["4991", "0"], ["0", "0"], ["0", "0"], ["0", "0"], ["0", "0"], ["0", "4991"], ["0", "0"]])
        XCTAssertEqual(table(try chart(tenant, "active_subscriptions", range), ["active_subscriptions"]).map { $0[0] },
                       Array(repeating: "1", count: 8))
        XCTAssertEqual(totals(try chart(tenant, "churn", range), ["active_at_start", "churned"]), ["8", "0"])

        // Three runs of one purchase, the first two ending within June: June's churn looks past the next run (it
        // ended too) to the third, which covers July 1st. Monthly: active at May 1st 0, June 1st 1 (the first run),
        // July 1st 1, August 1st 1 (the third ends at noon); churned: August's only.
        try post(api, tenant, "z", [
            Period(start: "2024-05-20T12:00:00Z", end: "2024-06-05T12:00:00Z", price: 9990),
            Period(start: "2024-06-10T12:00:00Z", end: "2024-06-15T12:00:00Z", price: 9990),
            Period(start: "2024-06-20T12:00:00Z", end: "2024-08-01T12:00:00Z", price: 9990),
        ])
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })
        let summer = "from=2024-05-01&to=2024-08-31&interval=month"
        XCTAssertEqual(table(try chart(tenant, "churn", summer), ["active_at_start", "churned"]),
                       [["0", "0"], ["1", "0"], ["1", "0"], ["1", "1"]])
        for query in [summer, "from=2024-05-15&to=2024-08-05&interval=day", "from=2024-05-01&to=2024-08-31&interval=week",
                      range, "from=2025-01-01&to=2025-01-31&interval=week"] {
            for (name, columns) in Self.bothPaths {
                XCTAssertEqual(table(try chart(tenant, name, query), columns),
                               table(try chart(tenant, name, query + "&country=USA"), columns), "\(name) \(query)")
            }
        }

        // Up to now, whose instant is past its midnight: the runs path adds the runs begun and ended since (one
        // still running, one ended an hour ago), the same as the sweep's (under the storefront filter).
        let iso = ISO8601DateFormatter()
        let now = Date()
        try post(api, tenant, "n1", [Period(start: iso.string(from: now - 36 * 3600), end: iso.string(from: now + 29 * 86400),
                                            price: 9990)])
        try post(api, tenant, "n2", [Period(start: iso.string(from: now - 40 * 3600), end: iso.string(from: now - 3600),
                                            price: 9990)])
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })
        let recent = "from=\(iso.string(from: now - 6 * 86400).prefix(10))&to=\(iso.string(from: now).prefix(10))&interval=day"
        let active = table(try chart(tenant, "active_subscriptions", recent), ["active_subscriptions"])
        XCTAssertEqual(active.last, ["1"])
        XCTAssertEqual(active, table(try chart(tenant, "active_subscriptions", recent + "&country=USA"),
                                     ["active_subscriptions"]))
        let columns = ["active_at_start", "churned"]
        XCTAssertEqual(table(try chart(tenant, "churn", recent), columns),
                       table(try chart(tenant, "churn", recent + "&country=USA"), columns))
        XCTAssertEqual(totals(try chart(tenant, "churn", recent), ["churned"]), ["1"])
        for (name, columns) in Self.bothPaths.dropFirst(2) {
            XCTAssertEqual(table(try chart(tenant, name, recent), columns),
                           table(try chart(tenant, name, recent + "&country=USA"), columns), name)
        }
        XCTAssertEqual(table(try chart(tenant, "mrr", recent), ["mrr_milli"]).last, ["9990"])
    }

    func testValidationAndPermissions() throws {
        let api = try api
        let tenant = try api.createProject()
        let bad = try api.client.get("/v1/admin/projects/\(tenant.id)/charts/ltv?interval=year&country=fr",
                                     headers: E2E.admin)
        assertError(bad, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try bad.json()["details"]?.arrayValue?.compactMap { $0["path"]?[0]?.stringValue },
                       ["chart", "interval", "country"])
        let long = try api.client.get("/v1/admin/projects/\(tenant.id)/charts/mrr?from=2024-01-01&to=2026-01-01",
                                      headers: E2E.admin)
        XCTAssertEqual(try long.json()["details"]?[0]?["message"], "At most 366 days")
        assertError(try api.client.get("/v1/admin/projects/\(UUID())/charts/mrr", headers: E2E.admin), 404,
                    "PROJECT_NOT_FOUND")
        let rates = try api.client.send("PUT", "/v1/admin/exchange-rates",
                                        json: ["date": "2025-02-30", "base": "eur", "rates": ["USD": "1e3", "JPY": -1]],
                                        headers: E2E.admin)
        assertError(rates, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try rates.json()["details"]?.arrayValue?.compactMap { $0["path"]?.description },
                       ["[\"date\"]", "[\"base\"]", "[\"rates\",\"USD\"]", "[\"rates\",\"JPY\"]"])
        let settings = try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/revenue-settings",
                                           json: ["reporting_currency": "usd"], headers: E2E.admin)
        XCTAssertEqual(try settings.json()["details"]?.arrayValue?.compactMap { $0["path"]?[0]?.stringValue },
                       ["small_business_program", "reporting_currency"])
    }
}

/// `bouncer fx import FILE` with a small file in the European Central Bank's history format (its own server: the
/// rates are the operator's, shared by every project).
final class FXImportE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "fx" }

    func testImportsTheECBHistoryFormatAndChartsConvertWithIt() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("eurofxref-hist.csv")
        try "Date,USD,JPY,GBP,CYP,\n2025-01-03,1.0299,162.88,0.8301,N/A,\n2025-01-02,1.0321,163.22,0.82880,N/A,\n"
            .write(to: file, atomically: true, encoding: .utf8)
        let run = try cli(["fx", "import", file.path])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(try JSONParser.parse(Array(run.stdout.utf8)),
                       ["imported": 6, "days": 2, "from": "2025-01-02", "to": "2025-01-03"])
        let rows = try db.query("""
            SELECT day::text AS d, base, currency, rate::text AS r FROM exchange_rates ORDER BY 1, 3
            """).map { "\(try $0.decode("d", as: String.self)) \(try $0.decode("base", as: String.self)) "
                + "\(try $0.decode("currency", as: String.self)) \(try $0.decode("r", as: String.self))" }
        XCTAssertEqual(rows, ["2025-01-02 EUR GBP 0.82880", "2025-01-02 EUR JPY 163.22", "2025-01-02 EUR USD 1.0321",
                              "2025-01-03 EUR GBP 0.8301", "2025-01-03 EUR JPY 162.88", "2025-01-03 EUR USD 1.0299"])
        let audit = try db.query("SELECT actor_label, action FROM audit_log WHERE action = 'exchange_rates.update'")
        XCTAssertEqual(try audit.map { try $0.decode("actor_label", as: String.self) }, ["cli"])

        // A malformed file stores nothing: exit 2.
        let bad = dir.appendingPathComponent("bad.csv")
        try "Date,USD\n2025-01-06,1,0321\n".write(to: bad, atomically: true, encoding: .utf8)
        let refused = try cli(["fx", "import", bad.path])
        XCTAssertEqual(refused.status, 2, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("line 2: more cells than the header"), refused.stderr)
        XCTAssertEqual(try db.count("exchange_rates"), 6)

        // 3.990 GBP bought on 2025-01-04 converts at the latest rates before it (01-03): USD per GBP
        // 1.0299 / 0.8301, × 3990 = 4950.3 → 4950 USD milli-units.
        let api = try api
        let tenant = try api.createProject()
        var p = TransactionPayload(bundleId: tenant.bundleId)
        p.purchaseDate = ChartsE2ETests.at("2025-01-04T12:00:00Z")
        p.originalPurchaseDate = p.purchaseDate
        p.expiresDate = ChartsE2ETests.at("2025-02-04T12:00:00Z")
        p.extra = [("price", 3990), ("currency", "GBP")]
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try p.mint(), user: "g").status, 201)
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })
        let r = try api.client.get("/v1/admin/projects/\(tenant.id)/charts/revenue?from=2025-01-04&to=2025-01-04",
                                   headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        XCTAssertEqual(try r.json()["points"]?[0]?["gross_milli"], 4950)
        XCTAssertEqual(try r.json()["points"]?[0]?["unconverted"], .object([:]))
    }
}
