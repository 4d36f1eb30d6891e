import Foundation
import JSON
import XCTest

/// The dashboard's charts and the customer list in headless Chromium (issue 26, item 4), as a viewer (a member with
/// `revenue.read` and `customers.read`) against the real `bouncer serve`: every rendered value of every chart equals
/// the API's JSON for the same range (the cohort charts' every retention cell, net per customer and amount without a
/// rate too, also under a product filter and for a range ending today), a chart links to the customers behind a point with the filters set, and the
/// customer list filters and pages as the API does.
final class ConsoleChartsE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "console_charts" }

    func testChartsAndCustomersInHeadlessChromiumEqualTheAPI() throws {
        let api = try api
        let created = try server.client.post("/v1/admin/accounts", json: ["name": "Charts"], headers: E2E.admin)
        XCTAssertEqual(created.status, 201, created.description)
        let account = try XCTUnwrap(try created.json()["id"]?.stringValue)
        let tenant = try api.createProject(extra: [("account_id", .string(account))])
        try api.mapProduct(tenant)
        try api.mapProduct(tenant, "com.e2e.pro.yearly", ["pro", "extra"])
        let rates = try api.client.send("PUT", "/v1/admin/exchange-rates",
                                        json: ["date": "2025-01-01", "base": "EUR", "rates": ["USD": "1.1"]], headers: E2E.admin)
        XCTAssertEqual(rates.status, 200, rates.description)
        typealias Period = CustomerListE2ETests.Period
        let day: Int64 = 86_400_000
        let at = ChartsE2ETests.at
        // January to March 2025: renewals, another currency, a refund, a currency without a rate, an upgrade.
        try CustomerListE2ETests.post(api, tenant, "alice", [
            Period(start: at("2025-01-05T12:00:00Z"), end: at("2025-02-05T12:00:00Z"), price: 9990),
            Period(start: at("2025-02-05T12:00:00Z"), end: at("2025-03-05T12:00:00Z"), price: 9990),
            Period(start: at("2025-03-05T12:00:00Z"), end: at("2025-04-05T12:00:00Z"), price: 9990,
                   refund: at("2025-03-10T12:00:00Z")),
        ])
        try CustomerListE2ETests.post(api, tenant, "bob", [
            Period(start: at("2025-01-10T12:00:00Z"), end: at("2025-02-10T12:00:00Z"), price: 4990, currency: "EUR"),
            Period(start: at("2025-02-10T12:00:00Z"), end: at("2025-03-10T12:00:00Z"), price: 4990, currency: "EUR"),
        ])
        try CustomerListE2ETests.post(api, tenant, "carol", [
            Period(start: at("2025-01-27T12:00:00Z"), end: at("2025-02-27T12:00:00Z"), price: 9990),
            Period(start: at("2025-02-15T12:00:00Z"), end: at("2026-02-15T12:00:00Z"), price: 59_990,
                   product: "com.e2e.pro.yearly"),
        ])
        try CustomerListE2ETests.post(api, tenant, "erin", [
            Period(start: at("2025-03-02T12:00:00Z"), end: at("2025-04-02T12:00:00Z"), price: 3990, currency: "GBP"),
        ])
        // More customers than a page holds (25), active now.
        let now = E2E.ms(0)
        for n in 0..<27 {
            try CustomerListE2ETests.post(api, tenant, String(format: "now%02d", n), [
                Period(start: now - Int64(n + 1) * 60_000, end: now + 30 * day, price: 990 + Int64(n) * 1000),
            ])
        }
        for (user, firstSeen) in [("alice", "2025-01-05T12:00:00Z"), ("bob", "2025-01-10T12:00:00Z"),
                                  ("carol", "2025-01-27T12:00:00Z"), ("erin", "2025-03-02T12:00:00Z")] {
            _ = try db.query("""
                UPDATE subscriptions SET bound_at = \(firstSeen)::timestamptz
                WHERE project_id = \(tenant.id)::uuid AND user_id = \(user) RETURNING 1
                """)
        }
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })
        let viewer = try member(account, "viewer")

        let output = try BrowserScript.run("console_charts_test.py", [
            "BOUNCER_URL": "http://127.0.0.1:\(server.port)", "PROJECT_ID": tenant.id, "EMAIL": viewer.email,
            "PASSWORD": MemberSession.password, "FROM": "2025-01-01", "TO": "2025-03-31",
        ], context: "server:\n\(server.stderr)")
        for step in ["viewer signed in", "every chart's points and totals equal the API's",
                     "every retention cell and LTV value equals the API's", "the cohort charts follow the range and the filters",
                     "a revenue bar opens the customers first seen in its month", "the list equals the API's",
                     "a status filter from the form", "pages walked forward and back", "no CSP violations"] {
            XCTAssertTrue(output.contains("STEP \(step)"), "missing step \(step):\n\(output)")
        }
    }
}
