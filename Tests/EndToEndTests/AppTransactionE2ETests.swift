import Foundation
import JSON
import Postgres
import XCTest

/// AppTransaction over real HTTP: `bouncer serve` trusting the test PKI, a fresh database, app transactions and
/// RESCIND_CONSENT notifications signed like Apple's, the before-version rule and the user's answer.
final class AppTransactionE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "apptx" }

    static let paidBefore2: JSONValue = ["purchased_before_version": "2.0", "entitlements": ["pro", "legacy"]]

    func tenant(setting: JSONValue = paidBefore2, environments: [String] = ["Production", "Sandbox"]) throws -> Tenant {
        try api.createProject(extra: [
            ("app_purchase_entitlements", setting), ("environments", .array(environments.map { .string($0) })),
        ])
    }

    func row(_ tenant: Tenant, _ id: String) throws -> Row? {
        try db.query("""
            SELECT user_id, original_application_version, consent_rescinded_at, environment, bundle_id
            FROM app_transactions WHERE project_id = \(tenant.id)::uuid AND app_transaction_id = \(id)
            """).first
    }

    func testCustomersWhoBoughtBeforeTheVersionGetTheEntitlementsAndTheirSource() throws {
        let api = try api
        let t = try tenant()
        XCTAssertEqual(t.created["app_purchase_entitlements"],
                       ["purchased_before_version": "2.0", "entitlements": ["legacy", "pro"]])
        let early = AppTransactionPayload(bundleId: t.bundleId)   // 1.9 < 2.0
        let user = "paid-\(E2E.uniqueId())"

        let r = try api.postAppTransaction(t.publicKey, try early.mint(), user: user)
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json(), [
            "app_transaction_id": .string(early.appTransactionId), "bundle_id": .string(t.bundleId),
            "environment": "Sandbox", "original_application_version": "1.9",
            "original_purchase_date": .string(E2E.iso(early.originalPurchaseDate)), "entitlements": ["legacy", "pro"],
            "consent_rescinded_at": nil,
        ])
        let stored = try XCTUnwrap(try row(t, early.appTransactionId))
        XCTAssertEqual(try stored.decode("user_id", as: String?.self), user)
        XCTAssertEqual(try stored.decode("original_application_version", as: String?.self), "1.9")
        XCTAssertEqual(try stored.decode("environment", as: String.self), "Sandbox")

        let answer = try api.user(t.publicKey, user)
        XCTAssertEqual(answer.status, 200, answer.description)
        XCTAssertEqual(try answer.json(), [
            "user_id": .string(user), "status": "active", "entitlements": ["legacy", "pro"], "subscriptions": [],
            "app_purchases": [[
                "source": "app_purchase", "app_transaction_id": .string(early.appTransactionId),
                "environment": "Sandbox", "original_application_version": "1.9",
                "original_purchase_date": .string(E2E.iso(early.originalPurchaseDate)),
                "entitlements": ["legacy", "pro"], "consent_rescinded_at": nil,
            ]],
            "consent_rescinded": false, "consent_rescinded_at": nil,
        ])

        // 2.0 is not lower than 2.0: shown, granting nothing.
        var current = AppTransactionPayload(bundleId: t.bundleId)
        current.originalApplicationVersion = "2.0"
        let other = "new-\(E2E.uniqueId())"
        let r2 = try api.postAppTransaction(t.publicKey, try current.mint(), user: other)
        XCTAssertEqual(r2.status, 201, r2.description)
        XCTAssertEqual(try r2.json()["entitlements"], [])
        var otherAnswer = try api.user(t.publicKey, other).json()
        XCTAssertEqual(otherAnswer["status"], "none")
        XCTAssertEqual(otherAnswer["entitlements"], [])
        XCTAssertEqual(otherAnswer["app_purchases"]?[0]?["entitlements"], [])

        // Raising the threshold reaches the (cached) answer at once: 2.0 < 10.1.
        let patch = try api.client.send("PATCH", "/v1/admin/projects/\(t.id)", json: [
            "app_purchase_entitlements": ["purchased_before_version": "10.1", "entitlements": ["pro"]],
        ], headers: E2E.admin)
        XCTAssertEqual(patch.status, 200, patch.description)
        XCTAssertEqual(try patch.json()["app_purchase_entitlements"],
                       ["purchased_before_version": "10.1", "entitlements": ["pro"]])
        otherAnswer = try api.user(t.publicKey, other).json()
        XCTAssertEqual(otherAnswer["status"], "active")
        XCTAssertEqual(otherAnswer["entitlements"], ["pro"])

        // The same app download posted for another user moves to them; the first user's cached answer drops it.
        let third = "moved-\(E2E.uniqueId())"
        XCTAssertEqual(try api.postAppTransaction(t.publicKey, try early.mint(), user: third).status, 201)
        XCTAssertEqual(try db.count("app_transactions", project: t.id), 2)
        XCTAssertEqual(try row(t, early.appTransactionId)?.decode("user_id", as: String?.self), third)
        let first = try api.user(t.publicKey, user).json()
        XCTAssertEqual(first, ["user_id": .string(user), "status": "none", "entitlements": [], "subscriptions": []])
        XCTAssertEqual(try api.user(t.publicKey, third).json()["entitlements"], ["pro"])

        // Clearing the setting: shown, granting nothing.
        let clear = try api.client.send("PATCH", "/v1/admin/projects/\(t.id)", json: ["app_purchase_entitlements": nil],
                                        headers: E2E.admin)
        XCTAssertEqual(clear.status, 200, clear.description)
        XCTAssertEqual(try clear.json()["app_purchase_entitlements"], .null)
        let cleared = try api.user(t.publicKey, third).json()
        XCTAssertEqual(cleared["status"], "none")
        XCTAssertEqual(cleared["app_purchases"]?[0]?["entitlements"], [])
    }

    func testRescindConsentMarksTheBoundUserAndLeavesEntitlementsAlone() throws {
        let api = try api
        let t = try tenant()
        let app = AppTransactionPayload(bundleId: t.bundleId)
        let user = "child-\(E2E.uniqueId())"
        XCTAssertEqual(try api.postAppTransaction(t.publicKey, try app.mint(), user: user).status, 201)
        XCTAssertEqual(try api.user(t.publicKey, user).json()["consent_rescinded"], false)  // cached now

        let signed = E2E.ms(-5)
        var rescind = NotificationPayload("RESCIND_CONSENT", bundleId: t.bundleId, signedDate: signed)
        rescind.body = .appData(app)
        try api.deliver(t.publicKey, rescind)

        let answer = try api.user(t.publicKey, user).json()
        XCTAssertEqual(answer["consent_rescinded"], true)
        XCTAssertEqual(answer["consent_rescinded_at"], .string(E2E.iso(signed)))
        XCTAssertEqual(answer["app_purchases"]?[0]?["consent_rescinded_at"], .string(E2E.iso(signed)))
        XCTAssertEqual(answer["status"], "active", "entitlements are the operator's decision")
        XCTAssertEqual(answer["entitlements"], ["legacy", "pro"])
        let stored = try XCTUnwrap(try row(t, app.appTransactionId))
        XCTAssertEqual(try stored.decode("consent_rescinded_at", as: Date?.self)?.timeIntervalSince1970,
                       Double(signed) / 1000)
        XCTAssertEqual(try db.count("notifications", project: t.id), 1)

        // A redelivery changes nothing; a later app post keeps the withdrawal.
        let again = try api.notify(t.publicKey, try rescind.mint())
        XCTAssertEqual(try again.json()["status"], "duplicate")
        let repost = try api.postAppTransaction(t.publicKey, try app.mint(), user: user)
        XCTAssertEqual(try repost.json()["consent_rescinded_at"], .string(E2E.iso(signed)))

        // For an app download Bouncer has not seen: recorded, bound to no one until the app posts it.
        let unseen = AppTransactionPayload(bundleId: t.bundleId)
        var rescindUnseen = NotificationPayload("RESCIND_CONSENT", bundleId: t.bundleId, signedDate: signed)
        rescindUnseen.body = .appData(unseen)
        try api.deliver(t.publicKey, rescindUnseen)
        let unseenRow = try XCTUnwrap(try row(t, unseen.appTransactionId))
        XCTAssertNil(try unseenRow.decode("user_id", as: String?.self))
        XCTAssertNotNil(try unseenRow.decode("consent_rescinded_at", as: Date?.self))
        let late = "late-\(E2E.uniqueId())"
        XCTAssertEqual(try api.postAppTransaction(t.publicKey, try unseen.mint(), user: late).status, 201)
        XCTAssertEqual(try api.user(t.publicKey, late).json()["consent_rescinded"], true)
    }

    func testRejectedAppTransactionsWriteNothing() throws {
        let api = try api
        let t = try tenant(environments: ["Production"])
        let sandbox = AppTransactionPayload(bundleId: t.bundleId)
        let notAllowed = try api.postAppTransaction(t.publicKey, try sandbox.mint(), user: "u")
        assertError(notAllowed, 400, "ENVIRONMENT_NOT_ALLOWED")
        XCTAssertEqual(try notAllowed.json()["details"]?[0]?["path"], ["signed_app_transaction"])

        let wrongBundle = AppTransactionPayload(bundleId: "com.someone.else")
        let mismatch = try api.postAppTransaction(t.publicKey, try wrongBundle.mint(), user: "u")
        assertError(mismatch, 400, "BUNDLE_ID_MISMATCH")
        XCTAssertEqual(try mismatch.json()["details"]?[0]?["step"], "claims")

        let sandboxTenant = try tenant()
        var noId = AppTransactionPayload(bundleId: sandboxTenant.bundleId)
        noId.includeId = false
        let missing = try api.postAppTransaction(sandboxTenant.publicKey, try noId.mint(), user: "u")
        assertError(missing, 400, "INVALID_JWS_FORMAT")
        XCTAssertEqual(try missing.json()["details"]?[0]?["message"],
                       "payload field appTransactionId is required but missing (StoreKit sends it since iOS 18.4)")

        let empty = try api.client.post("/v1/app-transactions/\(sandboxTenant.publicKey)", json: ["user_id": "u"])
        assertError(empty, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try empty.json()["details"], [["path": ["signed_app_transaction"], "message": "Required"]])

        let forged = try api.postAppTransaction(sandboxTenant.publicKey, "a.b.c", user: "u")
        XCTAssertEqual(forged.status, 400, forged.description)
        XCTAssertEqual(try db.count("app_transactions", project: t.id), 0)
        XCTAssertEqual(try db.count("app_transactions", project: sandboxTenant.id), 0)
    }

    func testTheSettingIsValidatedLikeProductMappings() throws {
        let api = try api
        let bad = try api.client.post("/v1/admin/projects", json: [
            "name": "x", "bundle_id": .string(E2E.uniqueBundle()),
            "app_purchase_entitlements": ["purchased_before_version": "2.x", "entitlements": [""]],
        ], headers: E2E.admin)
        assertError(bad, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try bad.json()["details"], [
            ["path": ["app_purchase_entitlements", "entitlements", "0"],
             "message": "String must contain at least 1 character(s)"],
        ])
        let version = try api.client.post("/v1/admin/projects", json: [
            "name": "x", "bundle_id": .string(E2E.uniqueBundle()),
            "app_purchase_entitlements": ["purchased_before_version": "2.x", "entitlements": ["pro"]],
        ], headers: E2E.admin)
        assertError(version, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try version.json()["details"]?[0]?["path"], ["app_purchase_entitlements", "purchased_before_version"])
    }

    func testThe2025TransactionFieldsAreStoredAndAPartialRefundKeepsTheEntitlement() throws {
        let api = try api
        let t = try tenant()
        try api.mapProduct(t, "com.e2e.pro.monthly", ["pro"])
        var p = TransactionPayload(bundleId: t.bundleId)
        p.revocationDate = E2E.ms(-1)
        p.revocationReason = 1
        p.revocationType = "REFUND_PRORATED"
        p.revocationPercentage = 25_000
        p.extra = [("appTransactionId", "704289572"), ("offerPeriod", "P3M"), ("offerDiscountType", "ONE_TIME"),
                   ("advancedCommerceInfo", ["requestReferenceId": "ref-1"])]
        let user = "partial-\(E2E.uniqueId())"
        let r = try api.postReceipt(t.publicKey, try p.mint(), user: user)
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json()["status"], "active")
        XCTAssertEqual(try r.json()["entitlements"], ["pro"])
        let row = try XCTUnwrap(try db.query("""
            SELECT app_transaction_id, offer_period, offer_discount_type, revocation_type, revocation_percentage,
                advanced_commerce_info::text AS aci, revocation_date
            FROM transactions WHERE project_id = \(t.id)::uuid AND transaction_id = \(p.transactionId)
            """).first)
        XCTAssertEqual(try row.decode("app_transaction_id", as: String?.self), "704289572")
        XCTAssertEqual(try row.decode("offer_period", as: String?.self), "P3M")
        XCTAssertEqual(try row.decode("offer_discount_type", as: String?.self), "ONE_TIME")
        XCTAssertEqual(try row.decode("revocation_type", as: String?.self), "REFUND_PRORATED")
        XCTAssertEqual(try row.decode("revocation_percentage", as: Int64?.self), 25_000)
        XCTAssertEqual(try row.decode("aci", as: String?.self), #"{"requestReferenceId": "ref-1"}"#)
        XCTAssertNil(try row.decode("revocation_date", as: Date?.self), "access is not revoked by a partial refund")
        let sub = try api.user(t.publicKey, user).json()["subscriptions"]?[0]
        XCTAssertEqual(sub?["status"], "active")
        XCTAssertEqual(sub?["partial_refund"], true)
        XCTAssertEqual(sub?["revocation_type"], "REFUND_PRORATED")
        XCTAssertEqual(sub?["revocation_percentage"], 25_000)

        // Apple's full refund of the same purchase (a newer signed statement) revokes.
        var full = p
        full.signedDate = E2E.ms(0)
        full.revocationType = "REFUND_FULL"
        full.revocationPercentage = 100_000
        XCTAssertEqual(try api.postReceipt(t.publicKey, try full.mint(), user: user).status, 201)
        let after = try api.user(t.publicKey, user).json()
        XCTAssertEqual(after["status"], "revoked")
        XCTAssertEqual(after["subscriptions"]?[0]?["partial_refund"], false)
    }

    func testXcodeConsentWithdrawalsNeitherCreateRowsNorTouchRealOnes() throws {
        let api = try api
        let t = try api.createProject(extra: [("allow_xcode", true), ("app_purchase_entitlements", Self.paidBefore2)])
        let real = AppTransactionPayload(bundleId: t.bundleId)
        let user = "real-\(E2E.uniqueId())"
        XCTAssertEqual(try api.postAppTransaction(t.publicKey, try real.mint(), user: user).status, 201)

        // A forged Xcode RESCIND_CONSENT reusing the real id, and one for an id nobody posted: recorded, no row.
        var forged = real
        forged.receiptType = "Xcode"
        var unseen = AppTransactionPayload(bundleId: t.bundleId)
        unseen.receiptType = "Xcode"
        for app in [forged, unseen] {
            var n = NotificationPayload("RESCIND_CONSENT", bundleId: t.bundleId)
            n.environment = "Xcode"
            n.body = .appData(app)
            try api.deliver(t.publicKey, n)
        }
        XCTAssertEqual(try db.count("app_transactions", project: t.id), 1)
        XCTAssertEqual(try api.user(t.publicKey, user).json()["consent_rescinded"], false)

        // An Xcode app transaction the app posted is its own row, and its withdrawal marks only it.
        let tester = "tester-\(E2E.uniqueId())"
        let posted = try api.postAppTransaction(t.publicKey, try forged.mint(), user: tester)
        XCTAssertEqual(posted.status, 201, posted.description)
        XCTAssertEqual(try posted.json()["environment"], "Xcode")
        var again = NotificationPayload("RESCIND_CONSENT", bundleId: t.bundleId)
        again.environment = "Xcode"
        again.body = .appData(forged)
        try api.deliver(t.publicKey, again)
        XCTAssertEqual(try api.user(t.publicKey, tester).json()["consent_rescinded"], true)
        XCTAssertEqual(try api.user(t.publicKey, user).json()["consent_rescinded"], false)
        XCTAssertEqual(try db.count("app_transactions", project: t.id), 2)
    }
}
