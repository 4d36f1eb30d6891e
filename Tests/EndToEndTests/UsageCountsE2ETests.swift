import Foundation
import JSON
import XCTest

/// The usage counters a request does not count itself (issue 24, item 6): calls to Apple and webhooks delivered,
/// against the real `bouncer serve`, a fake Apple over real TLS and a live webhook receiver.
final class UsageCountsE2ETests: AppleConnectedTestCase {
    override class func connect() throws -> AppleConnectedBouncer {
        try AppleConnectedBouncer(label: "usage_counts", overrides: [
            "BOUNCER_APPLE_LOOKUP_RATE_CLIENT": "0",
            "BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "1",
        ])
    }

    func testAppStoreCallsAndWebhooksDeliveredCountTowardTheProjectsAccount() throws {
        let client = try api.client
        let created = try client.post("/v1/admin/accounts", json: ["name": "Counted"], headers: E2E.admin)
        XCTAssertEqual(created.status, 201, created.description)
        let account = try XCTUnwrap(try created.json()["id"]?.stringValue)
        let (tenant, _) = try Self.fixture.get().createProject(settings: [("account_id", .string(account))],
                                                               keyId: "USAGE00001")
        let receiver = try WebhookReceiver()
        let hook = try client.send("PUT", "/v1/admin/projects/\(tenant.id)/webhook", json: ["url": .string(receiver.url)],
                                   headers: E2E.admin)
        XCTAssertEqual(hook.status, 200, hook.description)

        // A lookup by transaction id: one call to Apple (found in Production, the first environment asked).
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.environment = "Production"
        payload.extra = [("price", 4990), ("currency", "EUR")]
        try apple.setTransaction(payload.transactionId, signed: try payload.mint(), environment: .production)
        let lookup = try client.post("/v1/receipts/\(tenant.publicKey)",
                                     json: ["transaction_id": .string(payload.transactionId), "user_id": "counted_user"])
        XCTAssertEqual(lookup.status, 201, lookup.description)
        XCTAssertEqual(try apple.requests.filter { $0.id == payload.transactionId }.count, 1)

        // The purchase's events reach the receiver; the usage read counts each delivery once.
        XCTAssertTrue(try E2E.eventually {
            let rows = try self.db.query("""
                SELECT count(*) FILTER (WHERE status = 'delivered')::int8 AS delivered, count(*)::int8 AS total
                FROM webhook_events WHERE project_id = \(tenant.id)::uuid
                """)
            let delivered = try rows.first?.decode("delivered", as: Int64.self) ?? 0
            let total = try rows.first?.decode("total", as: Int64.self) ?? 0
            return delivered > 0 && delivered == total
        })
        let delivered = receiver.requests.count
        let types = try receiver.events().map { $0["type"] ?? .null }
        XCTAssertEqual(delivered, 2, "\(types)")

        let month = UsageE2ETests.thisMonth()
        let usage = try client.get("/v1/admin/accounts/\(account)/usage", headers: E2E.admin)
        XCTAssertEqual(usage.status, 200, usage.description)
        XCTAssertEqual(try usage.json(), .object(JSONObject([
            ("account_id", .string(account)), ("month", .string(month)), ("receipts_verified", 1),
            ("notifications_processed", 0), ("app_store_api_calls", 1), ("webhooks_delivered", 2),
            ("tracked_revenue", .object(JSONObject([("EUR", 4990)]))),
        ])))
        let rows = try db.query("""
            SELECT app_store_calls, webhooks_delivered FROM account_usage
            WHERE account_id = \(try XCTUnwrap(UUID(uuidString: account))) AND month = \(month + "-01")::date
            """)
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(try rows.first?.decode("app_store_calls", as: Int64.self), 1)
        XCTAssertEqual(try rows.first?.decode("webhooks_delivered", as: Int64.self), 2)
        // The operator's default account counted none of it.
        let other = try client.get("/v1/admin/accounts/00000000-0000-4000-8000-000000000001/usage", headers: E2E.admin).json()
        XCTAssertEqual(other["app_store_api_calls"], 0)
        XCTAssertEqual(other["webhooks_delivered"], 0)
    }
}
