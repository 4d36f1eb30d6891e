import Foundation
import JSON
import TestSupport
import XCTest

/// `realized_ltv` read from the deriver's roll-ups (schema/0086) against the statement that answers it under a filter
/// (the customers' transactions read with a probe per customer), on generated purchases held by customers with several
/// purchases and by none (a purchase is then its own customer), with full and prorated refunds and three currencies
/// (one without a rate); then after purchases move to other users: a restore under the transfer policy, one with the
/// secret key, a new transaction whose app account token names another user, a user's erasure. Equal day by day, week
/// by week, month by month and up to now; a replay of the log, and 0086's backfill rows, write the same roll-ups.
extension ChartsE2ETests {
    func testRealizedLTVRollUpsFollowCustomersAcrossMoves() throws {
        let api = try api
        let tenant = try api.createProject(extra: [("app_account_token_policy", "prefer")])
        _ = try putEuroRates(api, [("2025-01-01", "1.1"), ("2025-03-01", "1.2")])
        let purchases = generatedPurchases(tenant, seed: 86, count: 30)
        func holder(_ i: Int) -> String? { i % 5 == 4 ? nil : "l\(i % 7)" }
        for (i, payloads) in purchases.enumerated() {
            for p in payloads {
                let r = try api.postReceipt(tenant.publicKey, try p.mint(), user: holder(i))
                XCTAssertEqual(r.status, 201, r.description)
            }
        }
        func settle() throws {
            XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })
        }
        try settle()

        let iso = ISO8601DateFormatter()
        let today = iso.string(from: Date()).prefix(10)
        let recent = iso.string(from: Date() - 80 * 86_400).prefix(10)
        let yearAgo = iso.string(from: Date() - 365 * 86_400).prefix(10)
        let columns = ["date", "customers", "net_milli", "net_per_customer_milli"]
        func compare() throws -> [String] {
            var seen: [String] = []
            for query in ["from=2025-01-01&to=2025-06-30&interval=day", "from=2025-01-01&to=2025-12-31&interval=week",
                          "from=\(yearAgo)&to=\(today)&interval=month", "from=2025-02-01&to=2025-03-31&interval=month",
                          "from=\(recent)&to=\(today)&interval=day"] {
                let rolled = try chart(tenant, "realized_ltv", query)
                let swept = try chart(tenant, "realized_ltv", query + "&environment=Sandbox&country=USA")
                XCTAssertEqual(table(rolled, columns), table(swept, columns), query)
                XCTAssertEqual(Self.unconverted(rolled), Self.unconverted(swept), query)
                seen.append(table(rolled, columns).description + Self.unconverted(rolled).description)
            }
            return seen
        }
        func customers() throws -> [String: String] {
            var out: [String: String] = [:]
            for row in try db.query("""
                SELECT original_transaction_id AS o, min(customer) AS c FROM revenue_ltv_purchases
                WHERE project_id = \(tenant.id)::uuid GROUP BY 1
                """) {
                out[try row.decode("o", as: String.self)] = try row.decode("c", as: String.self)
            }
            return out
        }
        let before = try compare()
        // Customers with several purchases, some amounts without a rate (GBP), refunds.
        XCTAssertTrue(before.contains { $0.contains("GBP") }, before.description)
        let held = try customers()
        XCTAssertTrue(held.values.contains { $0.hasPrefix("p:") }, held.description)
        XCTAssertTrue(Dictionary(grouping: held.values, by: { $0 }).values.contains { $0.count > 1 }, held.description)

        // A restore by another user (the transfer policy moves the purchase), one with the secret key, and a new
        // transaction of a third purchase whose app account token names a user (`prefer` binds it to the token).
        let first = try XCTUnwrap(purchases[0].last)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try first.mint(), user: "m1").status, 201)
        let second = try XCTUnwrap(purchases[1].last)
        XCTAssertEqual(try api.client.post("/v1/receipts/\(tenant.publicKey)",
                                           json: E2E.receiptBody(try second.mint(), user: "m2"),
                                           headers: ["Authorization": "Bearer \(tenant.secretKey)"]).status, 201)
        let token = UUID().uuidString.lowercased()
        var third = try XCTUnwrap(purchases[2].last)
        third.transactionId = E2E.uniqueId()
        third.purchaseDate = (third.expiresDate ?? third.purchaseDate) + 1_000
        third.expiresDate = third.purchaseDate + 30 * 86_400_000
        third.revocationDate = nil
        third.revocationReason = nil
        third.revocationType = nil
        third.revocationPercentage = nil
        third.appAccountToken = token
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try third.mint(), user: "l2").status, 201)
        // An anonymous purchase (its own customer) restored by a user with purchases.
        let fourth = try XCTUnwrap(purchases[4].last)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try fourth.mint(), user: "l1").status, 201)
        try settle()
        let moved = try customers()
        XCTAssertEqual(moved[purchases[0][0].originalTransactionId], "u:m1")
        XCTAssertEqual(moved[purchases[1][0].originalTransactionId], "u:m2")
        XCTAssertEqual(moved[purchases[2][0].originalTransactionId], "u:" + token)
        XCTAssertEqual(moved[purchases[4][0].originalTransactionId], "u:l1")
        let after = try compare()
        XCTAssertNotEqual(after, before)

        // A user's erasure: the purchases they held are their own customers again.
        let erased = try api.client.delete("/v1/admin/projects/\(tenant.id)/users/l3", headers: E2E.admin)
        XCTAssertEqual(erased.status, 200, erased.description)
        try settle()
        XCTAssertFalse(try customers().values.contains("u:l3"))
        let afterErasure = try compare()

        func rollUps() throws -> [String] {
            try db.query("""
                SELECT 'p ' || environment || ' ' || original_transaction_id || ' ' || currency || ' ' || customer || ' '
                    || cohort_day || ' ' || first_at AS r
                FROM revenue_ltv_purchases WHERE project_id = \(tenant.id)::uuid
                UNION ALL SELECT 'c ' || environment || ' ' || customer || ' ' || first_at FROM revenue_ltv_customers
                WHERE project_id = \(tenant.id)::uuid
                UNION ALL SELECT 'd ' || environment || ' ' || cohort_day || ' ' || day || ' ' || currency || ' ' || kind
                    || ' ' || price_milli || ' ' || tier || ' ' || refund_milli_percent || ' ' || refund_at || ' ' || n
                FROM revenue_ltv_days WHERE project_id = \(tenant.id)::uuid ORDER BY 1
                """).map { try $0.decode("r", as: String.self) }
        }
        let incremental = try rollUps()
        XCTAssertGreaterThan(incremental.filter { $0.hasPrefix("d ") }.count, 30)
        XCTAssertTrue(incremental.contains { $0.hasPrefix("d ") && $0.contains(" 1 ") }, "a refund")
        // 0086's backfill: its rows alone write them again.
        for table in ["revenue_ltv_purchases", "revenue_ltv_customers", "revenue_ltv_days"] {
            _ = try db.query("DELETE FROM \(unsafeSQL: table) WHERE project_id = \(tenant.id)::uuid RETURNING 1")
        }
        XCTAssertEqual(try rollUps(), [])
        _ = try db.query("""
            INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
            SELECT DISTINCT v.project_id, v.environment, v.original_transaction_id, '{"ltv": "all"}'::jsonb, now()
            FROM revenue_transactions v WHERE v.project_id = \(tenant.id)::uuid AND v.price_milli > 0 RETURNING 1
            """)
        try settle()
        XCTAssertEqual(try rollUps(), incremental)
        // A rebuild of revenue_transactions with them, through the log.
        try rebuildRevenue(tenant)
        XCTAssertEqual(try rollUps(), incremental)
        XCTAssertEqual(try compare(), afterErasure)
    }
}
