import JSON
import Postgres
import XCTest

/// One shape per resource (issue 23): a purchase in webhook payloads is written in SQL (`bouncer_webhook_purchase_data`,
/// by the deriver, in the database) and in the API by Swift (the receipt's 201, `GET /v1/subscriptions`). For the same
/// stored purchase both must agree member by member, names and values; the table below names every member the SQL
/// payload has and where the Swift answers show it, so a member added on one side only fails here.
final class WebhookPayloadShapeE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "shapes" }

    /// Where the Swift answers show each member of the SQL payload.
    enum SwiftMember {
        /// The same name in the receipt's 201 answer.
        case receipt(String)
        /// The named member of the purchase's entry in `GET /v1/subscriptions`'s `subscriptions`.
        case subscription(String)
    }

    /// Every member of `bouncer_webhook_purchase_data`, with its Swift counterparts. `expires_at` is the receipt's
    /// `expires_date` and the subscription's `current_period_end` (the published names differ, the value may not).
    static let members: [(sql: String, swift: [SwiftMember])] = [
        ("environment", [.receipt("environment"), .subscription("environment")]),
        ("original_transaction_id", [.receipt("original_transaction_id"), .subscription("original_transaction_id")]),
        ("transaction_id", [.receipt("transaction_id")]),
        ("product_id", [.receipt("product_id"), .subscription("product_id")]),
        ("expires_at", [.receipt("expires_date"), .subscription("current_period_end")]),
        ("auto_renew_enabled", [.subscription("auto_renew_enabled")]),
        ("eligible_win_back_offer_ids", [.subscription("eligible_win_back_offer_ids")]),
    ]

    /// The members only a commitment plan's purchase has (in SQL and in the API alike).
    static let commitmentMembers: [(sql: String, swift: [SwiftMember])] = [
        ("billing_plan", [.subscription("billing_plan")]),
        ("commitment", [.subscription("commitment")]),
    ]

    func testWebhookPurchasePayloadAgreesWithTheAPIsRepresentationsMemberByMember() throws {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant, "com.e2e.pro.monthly", ["pro"])
        try api.mapProduct(tenant, "com.e2e.lifetime", ["lifetime"])
        let user = "shape-\(E2E.uniqueId())"

        let subscription = TransactionPayload(bundleId: tenant.bundleId)
        var lifetime = TransactionPayload(bundleId: tenant.bundleId)
        lifetime.productId = "com.e2e.lifetime"
        lifetime.type = "Non-Consumable"
        lifetime.expiresDate = nil
        var committed = TransactionPayload(bundleId: tenant.bundleId)
        committed.extra = [
            ("billingPlanType", "MONTHLY"),
            ("commitmentInfo", .object(JSONObject([
                ("billingPeriodNumber", 2), ("totalBillingPeriods", 12),
                ("commitmentExpiresDate", JSONValue(E2E.ms(330 * 86_400))), ("commitmentPrice", 9990),
            ]))),
        ]
        var receipts: [String: JSONValue] = [:]
        for payload in [subscription, lifetime, committed] {
            let posted = try api.postReceipt(tenant.publicKey, try payload.mint(), user: user)
            XCTAssertEqual(posted.status, 201, posted.description)
            receipts[payload.originalTransactionId] = try posted.json()
        }
        // Renewal info listing win-back offers, so the member compared is not only the empty default.
        var renewal = RenewalPayload(originalTransactionId: subscription.originalTransactionId)
        renewal.extra = [("eligibleWinBackOfferIds", ["winback-shape-a", "winback-shape-b"])]
        try api.deliver(tenant.publicKey, NotificationPayload(
            "DID_CHANGE_RENEWAL_PREF", nil, bundleId: tenant.bundleId, renewal: renewal, signedDate: E2E.ms(0)))

        let read = try api.user(tenant.publicKey, user)
        XCTAssertEqual(read.status, 200, read.description)
        let listed = try read.json()["subscriptions"]?.arrayValue ?? []

        var compared = 0
        for payload in [subscription, lifetime, committed] {
            let original = payload.originalTransactionId
            let members = Self.members + (payload.originalTransactionId == committed.originalTransactionId
                ? Self.commitmentMembers : [])
            let rows = try db.query("""
                -- ROW(p.*)::purchases: on Citus the statement runs on a shard, whose row type no function takes.
                SELECT bouncer_webhook_purchase_data(ROW(p.*)::purchases)::text AS data FROM purchases p
                WHERE p.project_id = \(tenant.id)::uuid AND p.original_transaction_id = \(original)
                """)
            let text = try XCTUnwrap(rows.first, original).decode("data", as: String.self)
            guard case .object(let sql) = try JSONParser.parse(Array(text.utf8)) else {
                return XCTFail("not an object: \(text)")
            }
            XCTAssertEqual(sql.map(\.key).sorted(), members.map(\.sql).sorted(),
                           "every member of the SQL payload has a row in the table")
            let receipt = try XCTUnwrap(receipts[original])
            let entry = try XCTUnwrap(listed.first { $0["original_transaction_id"]?.stringValue == original }, original)
            for (name, counterparts) in members {
                let value = sql[name]
                for counterpart in counterparts {
                    switch counterpart {
                    case .receipt(let key):
                        XCTAssertEqual(receipt[key], value, "\(original): SQL \(name) vs the receipt's \(key)")
                    case .subscription(let key):
                        XCTAssertEqual(entry[key], value, "\(original): SQL \(name) vs the subscription's \(key)")
                    }
                    compared += 1
                }
            }
        }
        XCTAssertEqual(compared, 3 * Self.members.map(\.swift.count).reduce(0, +)
            + Self.commitmentMembers.map(\.swift.count).reduce(0, +))
        let winBack = listed.first { $0["original_transaction_id"]?.stringValue == subscription.originalTransactionId }
        XCTAssertEqual(winBack?["eligible_win_back_offer_ids"], ["winback-shape-a", "winback-shape-b"])
        let lifetimeEntry = listed.first { $0["original_transaction_id"]?.stringValue == lifetime.originalTransactionId }
        XCTAssertEqual(lifetimeEntry?["eligible_win_back_offer_ids"], [])
    }
}
