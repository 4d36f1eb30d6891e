import Foundation
import JSON
import TestSupport
import XCTest

/// Webhook events carry the money of their transaction (issue 26): `price` and `currency` as Apple signed them,
/// `proceeds` after Apple's commission and `net` after refunds, milli-units, derived after the receipt's transaction.
final class WebhookMoneyE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "webhook_money" }
    override class var serverOverrides: [String: String?] {
        [
            "BOUNCER_ENCRYPTION_KEY": Data((0..<32).map { UInt8($0 * 3 + 2) }).base64EncodedString(),
            "BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "1",
            "BOUNCER_WEBHOOK_RETRY_BASE_SECONDS": "0.1",
            "BOUNCER_WEBHOOK_CONCURRENCY": "1",
        ]
    }

    /// The money members of an event's data (absent ones as null).
    private func money(_ event: JSONValue) -> [JSONValue] {
        ["price", "currency", "proceeds", "net"].map { event["data"]?[$0] ?? .null }
    }

    func testStartedRenewedAndRefundedEventsCarryPriceProceedsAndNet() throws {
        let api = try api
        let receiver = try WebhookReceiver()
        let tenant = try api.createProject()
        try api.mapProduct(tenant, "com.e2e.pro.monthly", ["pro"])
        let hook = try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/webhook", json: [
            "url": .string(receiver.url),
            "events": ["subscription.started", "subscription.renewed", "transaction.refunded"],
        ], headers: E2E.admin)
        XCTAssertEqual(hook.status, 200, hook.description)

        var first = TransactionPayload(bundleId: tenant.bundleId)
        first.purchaseDate = E2E.ms(-3600)
        first.originalPurchaseDate = first.purchaseDate
        first.extra = [("price", 9990), ("currency", "USD")]
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try first.mint(), user: "m").status, 201)
        guard receiver.waitForEvents(1) else { return }
        // 30 %: 9990 − 2997.
        XCTAssertEqual(try receiver.events()[0]["type"], "subscription.started")
        XCTAssertEqual(money(try receiver.events()[0]), [9990, "USD", 6993, 6993])

        // A renewal in EUR, under the Small Business Program: 15 % of 4990 is 748.5 → 749.
        let settings = try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/revenue-settings",
                                           json: ["small_business_program": true, "reporting_currency": "USD"],
                                           headers: E2E.admin)
        XCTAssertEqual(settings.status, 200, settings.description)
        var renewal = TransactionPayload(bundleId: tenant.bundleId, originalTransactionId: first.transactionId)
        renewal.purchaseDate = E2E.ms(-60)
        renewal.originalPurchaseDate = first.purchaseDate
        renewal.expiresDate = E2E.ms(60 * 86_400)
        renewal.extra = [("price", 4990), ("currency", "EUR")]
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try renewal.mint(), user: "m").status, 201)
        guard receiver.waitForEvents(2) else { return }
        XCTAssertEqual(try receiver.events()[1]["type"], "subscription.renewed")
        XCTAssertEqual(money(try receiver.events()[1]), [4990, "EUR", 4241, 4241])

        // Refunded in full: nothing net.
        var refunded = renewal
        refunded.revocationDate = E2E.ms(-1)
        refunded.revocationReason = 1
        refunded.revocationType = "REFUND_FULL"
        refunded.signedDate = E2E.ms(0)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try refunded.mint(), user: "m").status, 201)
        guard receiver.waitForEvents(3) else { return }
        XCTAssertEqual(try receiver.events()[2]["type"], "transaction.refunded")
        XCTAssertEqual(money(try receiver.events()[2]), [4990, "EUR", 4241, 0])
    }
}
