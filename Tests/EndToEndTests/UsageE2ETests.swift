import Foundation
import JSON
import Postgres
import XCTest

/// Usage and quotas per account against the real `bouncer serve` and PostgreSQL (issue 24, item 6).
final class UsageE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "usage" }

    func createAccount(_ name: String) throws -> String {
        let r = try server.client.post("/v1/admin/accounts", json: ["name": .string(name)], headers: E2E.admin)
        XCTAssertEqual(r.status, 201, r.description)
        return try XCTUnwrap(try r.json()["id"]?.stringValue)
    }

    func putQuotas(_ account: String, receipts: JSONValue, rate: JSONValue) throws -> HTTPResponse {
        try server.client.send("PUT", "/v1/admin/accounts/\(account)/quotas",
                               json: .object(JSONObject([("receipts_per_month", receipts), ("requests_per_second", rate)])),
                               headers: E2E.admin)
    }

    /// The current UTC month as `YYYY-MM`.
    static func thisMonth() -> String { String(E2E.iso(E2E.ms(0)).prefix(7)) }

    func testMonthlyQuotaRefusesTheNextReceiptOfThatAccountOnlyAndUsageCountsWhatWasDone() throws {
        let api = try api
        let client = api.client
        let acme = try createAccount("Quota Acme")
        let other = try createAccount("Quota Other")
        let limited = try api.createProject(extra: [("account_id", .string(acme))])
        let free = try api.createProject(extra: [("account_id", .string(other))])
        try api.mapProduct(limited)
        try api.mapProduct(free)

        let set = try putQuotas(acme, receipts: 2, rate: .null)
        XCTAssertEqual(set.status, 200, set.description)
        XCTAssertEqual(try set.json(), ["account_id": .string(acme), "receipts_per_month": 2, "requests_per_second": .null])
        XCTAssertEqual(try client.get("/v1/admin/accounts/\(acme)/quotas", headers: E2E.admin).json(),
                       ["account_id": .string(acme), "receipts_per_month": 2, "requests_per_second": .null])

        var usd = TransactionPayload(bundleId: limited.bundleId)
        usd.extra = [("price", 9990), ("currency", "USD")]
        var eur = TransactionPayload(bundleId: limited.bundleId)
        eur.extra = [("price", 4990), ("currency", "EUR")]
        for payload in [usd, eur] {
            let r = try api.postReceipt(limited.publicKey, try payload.mint(), user: "quota_user")
            XCTAssertEqual(r.status, 201, r.description)
        }
        let before = Date()
        let refused = try api.postReceipt(limited.publicKey, try TransactionPayload(bundleId: limited.bundleId).mint())
        let after = Date()
        assertError(refused, 429, "QUOTA_EXCEEDED", error: "This account has used its receipts for this month.",
                    suggestion: "Retry after the number of seconds in Retry-After (the next month, UTC), or ask the "
                        + "operator to raise the account's receipts_per_month quota.")
        let retry = try XCTUnwrap(refused.header("Retry-After").flatMap(Int.init))
        let nextMonth = Self.nextMonthStart(after: before)
        XCTAssertGreaterThanOrEqual(retry, Int(nextMonth.timeIntervalSince(after).rounded(.down)))
        XCTAssertLessThanOrEqual(retry, Int(nextMonth.timeIntervalSince(before).rounded(.up)) + 1)
        // Every public route of the account, not its admin routes; another account not at all.
        assertError(try api.user(limited.publicKey, "quota_user"), 429, "QUOTA_EXCEEDED")
        XCTAssertEqual(try client.get("/v1/admin/projects/\(limited.id)", headers: E2E.admin).status, 200)
        let elsewhere = try api.postReceipt(free.publicKey, try TransactionPayload(bundleId: free.bundleId).mint())
        XCTAssertEqual(elsewhere.status, 201, elsewhere.description)

        // The usage read flushes this process's counts first: exact, and the row says the same.
        let month = Self.thisMonth()
        let usage = try client.get("/v1/admin/accounts/\(acme)/usage", headers: E2E.admin)
        XCTAssertEqual(usage.status, 200, usage.description)
        XCTAssertEqual(try usage.json(), .object(JSONObject([
            ("account_id", .string(acme)), ("month", .string(month)), ("receipts_verified", 2),
            ("notifications_processed", 0), ("app_store_api_calls", 0), ("webhooks_delivered", 0),
            ("tracked_revenue", .object(JSONObject([("EUR", 4990), ("USD", 9990)]))),
        ])))
        let rows = try db.query("""
            SELECT receipts, notifications, app_store_calls, webhooks_delivered FROM account_usage
            WHERE account_id = \(try XCTUnwrap(UUID(uuidString: acme))) AND month = \(month + "-01")::date
            """)
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(try rows.first?.decode("receipts", as: Int64.self), 2)
        XCTAssertEqual(try rows.first?.decode("notifications", as: Int64.self), 0)
        let otherUsage = try client.get("/v1/admin/accounts/\(other)/usage?month=\(month)", headers: E2E.admin).json()
        XCTAssertEqual(otherUsage["receipts_verified"], 1)
        XCTAssertEqual(otherUsage["tracked_revenue"], [:])
        // A developer counts usage but sees no money (revenue.read is not theirs).
        let created = try client.post("/v1/admin/accounts/\(acme)/api-keys", json: ["name": "dev", "role": "developer"],
                                      headers: E2E.admin)
        XCTAssertEqual(created.status, 201, created.description)
        let developerKey = try XCTUnwrap(try created.json()["key"]?.stringValue)
        let developer = try client.get("/v1/admin/accounts/\(acme)/usage?month=\(month)",
                                       headers: ["Authorization": "Bearer \(developerKey)"])
        XCTAssertEqual(developer.status, 200, developer.description)
        XCTAssertEqual(try developer.json(), .object(JSONObject([
            ("account_id", .string(acme)), ("month", .string(month)), ("receipts_verified", 2),
            ("notifications_processed", 0), ("app_store_api_calls", 0), ("webhooks_delivered", 0),
        ])))
        // Another month: nothing.
        let old = try client.get("/v1/admin/accounts/\(acme)/usage?month=2001-02", headers: E2E.admin).json()
        XCTAssertEqual(old["month"], "2001-02")
        XCTAssertEqual(old["receipts_verified"], 0)

        // Lifting the quota lets the account in again.
        XCTAssertEqual(try putQuotas(acme, receipts: .null, rate: .null).status, 200)
        let again = try api.postReceipt(limited.publicKey, try TransactionPayload(bundleId: limited.bundleId).mint())
        XCTAssertEqual(again.status, 201, again.description)
    }

    func testRequestsPerSecondQuota() throws {
        let api = try api
        let account = try createAccount("Rate")
        let tenant = try api.createProject(extra: [("account_id", .string(account))])
        XCTAssertEqual(try putQuotas(account, receipts: .null, rate: 1).status, 200)
        // A bucket of one token refilled at one per second: the second request at once is refused for ~1 s.
        XCTAssertEqual(try api.user(tenant.publicKey, "rate_user").status, 200)
        let refused = try api.user(tenant.publicKey, "rate_user")
        assertError(refused, 429, "QUOTA_EXCEEDED",
                    error: "This account is sending more requests per second than its quota allows.")
        XCTAssertEqual(refused.header("Retry-After"), "1")
        XCTAssertEqual(try putQuotas(account, receipts: .null, rate: .null).status, 200)
        XCTAssertEqual(try api.user(tenant.publicKey, "rate_user").status, 200)
    }

    func testBadMonthAndBadQuotasAre400() throws {
        let client = try server.client
        let account = try createAccount("Bad input")
        for month in ["2026-13", "2026-1", "26-01", "2026-00", "abcd-ef"] {
            let r = try client.get("/v1/admin/accounts/\(account)/usage?month=\(month)", headers: E2E.admin)
            assertError(r, 400, "VALIDATION_ERROR",
                        suggestion: "Optional query parameter month: a UTC calendar month as YYYY-MM (e.g. 2026-05); "
                            + "omit it for the current month.")
            XCTAssertEqual(try r.json()["details"], [["path": ["month"], "message": "Invalid month (YYYY-MM, e.g. 2026-05)"]])
        }
        assertError(try putQuotas(account, receipts: -1, rate: 0), 400, "VALIDATION_ERROR")
        assertError(try client.get("/v1/admin/accounts/\(UUID().uuidString.lowercased())/usage", headers: E2E.admin),
                    404, "ACCOUNT_NOT_FOUND")
        assertError(try putQuotas(UUID().uuidString.lowercased(), receipts: 1, rate: 1), 404, "ACCOUNT_NOT_FOUND")
    }

    static func nextMonthStart(after date: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        let start = calendar.date(from: calendar.dateComponents([.year, .month], from: date)) ?? date
        return calendar.date(byAdding: .month, value: 1, to: start) ?? date
    }
}
