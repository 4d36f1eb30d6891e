import Foundation
import JSON
import XCTest

/// Monthly plans with a 12-month commitment (App Store Server API 1.21) over the real `bouncer` process: the signed
/// transaction's `billingPlanType` and `commitmentInfo` and the renewal info's `commitmentInfo` appear on the user's
/// subscription as `billing_plan` and `commitment`; an ordinary plan keeps its published shape.
final class CommitmentPlansE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "commitment" }

    func testCommitmentPlanShowsPlanAndCommitmentAndOrdinaryPlansKeepTheirShape() throws {
        let api = try self.api
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let commitmentEnds = E2E.ms(300 * 86_400)
        var t = TransactionPayload(bundleId: tenant.bundleId)
        t.extra = [
            ("billingPlanType", "MONTHLY"),
            ("commitmentInfo", .object(JSONObject([
                ("billingPeriodNumber", 3), ("totalBillingPeriods", 12),
                ("commitmentExpiresDate", JSONValue(commitmentEnds)), ("commitmentPrice", 9990),
            ]))),
        ]
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try t.mint(), user: "committed").status, 201)

        func subscription(_ user: String) throws -> JSONValue? {
            let r = try api.user(tenant.publicKey, user)
            XCTAssertEqual(r.status, 200, r.description)
            return try r.json()["subscriptions"]?.arrayValue?.first
        }
        // Before renewal info: the transaction's facts, will_renew unknown.
        var sub = try XCTUnwrap(try subscription("committed"))
        XCTAssertEqual(sub["billing_plan"], "MONTHLY")
        XCTAssertEqual(sub["commitment"], [
            "billing_period": 3, "total_billing_periods": 12,
            "commitment_expires_date": .string(E2E.iso(commitmentEnds)), "will_renew": nil,
        ])

        // Renewal info saying the commitment will not renew (a notification, as Apple sends it).
        var renewal = RenewalPayload(originalTransactionId: t.originalTransactionId)
        renewal.extra = [
            ("renewalBillingPlanType", "MONTHLY"),
            ("commitmentInfo", .object(JSONObject([
                ("commitmentAutoRenewStatus", 0), ("commitmentAutoRenewProductId", "com.e2e.pro.monthly"),
                ("commitmentRenewalBillingPlanType", "MONTHLY"), ("commitmentRenewalDate", JSONValue(commitmentEnds)),
                ("commitmentRenewalPrice", 9990),
            ]))),
        ]
        var n = NotificationPayload("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", bundleId: tenant.bundleId,
                                    transaction: t, renewal: renewal)
        n.signedDate = E2E.ms(0)
        _ = try api.deliver(tenant.publicKey, n)
        sub = try XCTUnwrap(try subscription("committed"))
        XCTAssertEqual(sub["commitment"]?["will_renew"], false)
        XCTAssertEqual(sub["commitment"]?["billing_period"], 3)

        // An ordinary plan: neither member (the published shape, byte for byte).
        let plain = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try plain.mint(), user: "plain").status, 201)
        let ordinary = try XCTUnwrap(try subscription("plain")?.objectValue)
        XCTAssertNil(ordinary["billing_plan"])
        XCTAssertNil(ordinary["commitment"])

        // Billed up front without commitment info: the plan, and commitment null.
        var upfront = TransactionPayload(bundleId: tenant.bundleId)
        upfront.extra = [("billingPlanType", "BILLED_UPFRONT")]
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try upfront.mint(), user: "upfront").status, 201)
        let billed = try XCTUnwrap(try subscription("upfront")?.objectValue)
        XCTAssertEqual(billed["billing_plan"], "BILLED_UPFRONT")
        XCTAssertEqual(billed["commitment"], .null)
    }
}
