import Foundation
import JSON
import XCTest

/// Real App Store Server Notifications (Apple-signed sandbox and production vectors from `Tests/Fixtures/apple/test-vectors`)
/// against a server trusting only the bundled Apple roots.
final class NotificationAppleE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "notifyapple" }
    override class var serverOverrides: [String: String?] { ["BOUNCER_ROOT_CERTIFICATES": nil] }


    static let session2025 = [
        "DID_RENEW", "SUBSCRIBED-RESUBSCRIBE", "DID_CHANGE_RENEWAL_STATUS-AUTO_RENEW_DISABLED", "EXPIRED-VOLUNTARY",
        "DID_CHANGE_RENEWAL_PREF-UPGRADE", "DID_CHANGE_RENEWAL_PREF-DOWNGRADE", "CONSUMPTION_REQUEST", "REFUND",
    ]

    static func vector(_ name: String) throws -> String {
        try String(contentsOf: E2EPaths.vectors.appendingPathComponent(name), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func notificationVector(_ name: String) throws -> String {
        try vector("sandbox-2025-notification-\(name).jws")
    }

    func sessionProject(appAppleId: Int64 = 1_470_168_868) throws -> Tenant {
        let api = try api
        let tenant = try api.createProject(
            bundleId: "com.loki-project.loki-messenger", name: "Session",
            extra: [("environments", ["Sandbox"]), ("app_apple_id", JSONValue(appAppleId))])
        try api.mapProduct(tenant, "com.getsession.org.pro_sub", ["pro"])
        try api.mapProduct(tenant, "com.getsession.org.pro_sub_3_months", ["pro"])
        return tenant
    }

    func testRealSandboxNotificationsAreAcceptedAndAppliedInAnyOrder() throws {
        let api = try api
        let db = try db
        var answers: [JSONValue] = []
        let orders = [Self.session2025, Array(Self.session2025.reversed()),
                      ["REFUND", "DID_RENEW", "EXPIRED-VOLUNTARY", "CONSUMPTION_REQUEST", "SUBSCRIBED-RESUBSCRIBE",
                       "DID_CHANGE_RENEWAL_PREF-DOWNGRADE", "DID_CHANGE_RENEWAL_STATUS-AUTO_RENEW_DISABLED",
                       "DID_CHANGE_RENEWAL_PREF-UPGRADE"]]
        for order in orders {
            let tenant = try sessionProject()
            // The app posted the first renewal (its period ended in 2025): bound, expired.
            let bound = try api.postReceipt(
                tenant.publicKey, try Self.vector("sandbox-2025-DID_RENEW-nested-transaction.jws"), user: "session-user")
            XCTAssertEqual(bound.status, 201, bound.description)
            XCTAssertEqual(try api.user(tenant.publicKey, "session-user").json()["status"], "expired")

            for name in order {
                let jws = try Self.notificationVector(name)
                let uuid = try XCTUnwrap(E2E.payload(ofJWS: jws)["notificationUUID"])
                let r = try api.notify(tenant.publicKey, jws)
                XCTAssertEqual(r.status, 200, "\(name): \(r)")
                XCTAssertEqual(try r.json(), ["status": "processed", "notification_uuid": uuid], name)
            }
            XCTAssertEqual(try db.count("notifications", project: tenant.id), 8)

            // Apple's refund of the newest period (signed last) decides: revoked, whatever the order.
            let user = try api.user(tenant.publicKey, "session-user").json()
            XCTAssertEqual(user["status"], "revoked", "\(order)")
            XCTAssertEqual(user["entitlements"], [])
            let subscription = try XCTUnwrap(user["subscriptions"]?[0])
            XCTAssertEqual(subscription["original_transaction_id"], "2000001024993299")
            XCTAssertEqual(subscription["product_id"], "com.getsession.org.pro_sub")
            XCTAssertEqual(subscription["current_period_end"], .string(E2E.iso(1_760_335_309_000)))
            XCTAssertEqual(subscription["revocation_date"], .string(E2E.iso(1_760_591_999_000)))
            XCTAssertEqual(subscription["auto_renew_product_id"], "com.getsession.org.pro_sub_3_months")
            XCTAssertEqual(subscription["environment"], "Sandbox")
            XCTAssertEqual(subscription["ownership_type"], "PURCHASED")
            answers.append(subscription)
            let rows = try db.query("""
                SELECT latest_transaction_id FROM purchases WHERE project_id = \(tenant.id)::uuid
                """).map { try $0.decode("latest_transaction_id", as: String.self) }
            XCTAssertEqual(rows, ["2000001032604840"])
            XCTAssertEqual(try db.count("transactions", project: tenant.id), 4,
                           "2000001024998954, 2000001025686313, 2000001027701928, 2000001032604840")

            // Redelivery: acknowledged, nothing changes.
            let again = try api.notify(tenant.publicKey, try Self.notificationVector("DID_RENEW"))
            XCTAssertEqual(try again.json()["status"], "duplicate")
            XCTAssertEqual(try api.user(tenant.publicKey, "session-user").json()["subscriptions"]?[0], subscription)
        }
        XCTAssertEqual(answers[1], answers[0])
        XCTAssertEqual(answers[2], answers[0])
    }

    func testRealNotificationsForAnotherProjectAreRejectedAndStoreNothing() throws {
        let api = try api
        let db = try db
        let refund = try Self.notificationVector("REFUND")
        let other = try api.createProject(bundleId: "com.example.not-session", extra: [("environments", ["Sandbox"])])
        assertError(try api.notify(other.publicKey, refund), 400, "BUNDLE_ID_MISMATCH")
        let wrongApp = try sessionProject(appAppleId: 999)
        assertError(try api.notify(wrongApp.publicKey, refund), 400, "APP_APPLE_ID_MISMATCH")
        let productionOnly = try api.createProject(
            bundleId: "com.loki-project.loki-messenger", extra: [("environments", ["Production"])])
        assertError(try api.notify(productionOnly.publicKey, refund), 400, "ENVIRONMENT_NOT_ALLOWED")
        // A test-PKI signature is not Apple's.
        let forged = try NotificationPayload("REFUND", bundleId: "com.loki-project.loki-messenger").mint()
        assertError(try api.notify(wrongApp.publicKey, forged), 400, "JWS_VERIFICATION_FAILED")
        for tenant in [other, wrongApp, productionOnly] {
            XCTAssertEqual(try db.count("notifications", project: tenant.id), 0)
            XCTAssertEqual(try db.count("transactions", project: tenant.id), 0)
        }
    }

    func testRealProductionNotificationIsVerifiedAtItsSignedDate() throws {
        // Its leaf certificate expired in 2023; it verifies at the notification's signedDate, as Apple's libraries do.
        let api = try api
        let db = try db
        let tenant = try api.createProject(
            bundleId: "com.jrjj.keysns", extra: [("environments", ["Production"]), ("app_apple_id", 1_601_830_814)])
        let r = try api.notify(tenant.publicKey, try Self.vector("production-2023-notification-CONSUMPTION_REQUEST.jws"))
        XCTAssertEqual(r.status, 200, r.description)
        XCTAssertEqual(try r.json(), ["status": "processed", "notification_uuid": "cbff6987-b8d9-43d8-b1dc-07fa8c9fd945"])
        let list = try api.client.get("/v1/admin/projects/\(tenant.id)/notifications", headers: E2E.admin).json()
        XCTAssertEqual(list["notifications"]?[0]?["type"], "CONSUMPTION_REQUEST")
        XCTAssertEqual(list["notifications"]?[0]?["original_transaction_id"], "510001261072921")
        XCTAssertEqual(list["notifications"]?[0]?["environment"], "Production")
        XCTAssertEqual(list["notifications"]?[0]?["signed_date"], .string(E2E.iso(1_687_941_512_560)))
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 1)
    }
}
