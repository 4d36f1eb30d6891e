import Foundation
import JSON
import XCTest

/// The Xcode forgery attack of issue 11 over real HTTP against the real `bouncer` process: with `allow_xcode` on,
/// anyone can sign `Xcode` data with a self-made certificate. It must never change what a real customer gets.
final class XcodeIsolationE2ETests: SharedServerTestCase {
    static let metricsToken = "e2e-metrics-token-0123456789abcdef"
    override class var serverLabel: String { "xcode" }
    override class var serverOverrides: [String: String?] { ["BOUNCER_METRICS_TOKEN": metricsToken] }


    /// `payload` signed as StoreKit Testing in Xcode does it: any certificate, here one under a root nobody trusts.
    func xcodeSigned(_ payload: TransactionPayload) throws -> String {
        var xcode = payload
        xcode.environment = "Xcode"
        return try E2E.mint(xcode.json, x5c: [E2EPaths.untrustedCerts.appendingPathComponent("untrusted-leaf.pem").path])
    }

    func testXcodeForgeryOfARealTransactionLeavesTheRealCustomerUnchanged() throws {
        let api = try api
        let tenant = try api.createProject(extra: [("allow_xcode", true)])
        try api.mapProduct(tenant)
        let real = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try real.mint(), user: "alice").status, 201)
        let before = try api.user(tenant.publicKey, "alice")
        XCTAssertEqual(before.status, 200, before.description)
        XCTAssertEqual(try before.json()["entitlements"], ["pro"])

        // The forger reuses the real ids, signs later, adds a refund, and posts for another user.
        var forged = real
        forged.signedDate = E2E.ms(0)
        forged.revocationDate = E2E.ms(0)
        forged.revocationReason = 0
        let post = try api.postReceipt(tenant.publicKey, try xcodeSigned(forged), user: "mallory")
        XCTAssertEqual(post.status, 201, post.description)
        XCTAssertEqual(try post.json()["environment"], "Xcode")
        XCTAssertEqual(try post.json()["status"], "revoked")

        // And an Xcode REFUND notification about the real purchase.
        var refund = NotificationPayload("REFUND", bundleId: tenant.bundleId, transaction: nil)
        refund.environment = "Xcode"
        var nested = forged
        nested.environment = "Xcode"
        nested.signedDate = E2E.ms(1)
        refund.transaction = nested
        try api.deliver(tenant.publicKey, refund)

        let after = try api.user(tenant.publicKey, "alice")
        XCTAssertEqual(after.status, 200, after.description)
        XCTAssertEqual(after.text, before.text, "the real customer's answer is byte-for-byte unchanged")
        let mallory = try api.user(tenant.publicKey, "mallory")
        XCTAssertEqual(try mallory.json()["entitlements"], [])
        XCTAssertEqual(try mallory.json()["subscriptions"]?[0]?["environment"], "Xcode")
        let db = try db
        XCTAssertEqual(try db.count("ownership_events", project: tenant.id), 0, "nobody lost the real purchase")
        let realRow = try db.query("""
            SELECT environment, revocation_date IS NULL AS intact FROM purchases
            WHERE project_id = \(tenant.id)::uuid AND original_transaction_id = \(real.originalTransactionId)
            ORDER BY environment
            """).map { "\(try $0.decode("environment", as: String.self)) \(try $0.decode("intact", as: Bool.self))" }
        XCTAssertEqual(realRow, ["Sandbox true", "Xcode false"])
    }

    func testXcodeDataIsRefusedByAProductionOnlyProjectEvenWithAllowXcode() throws {
        let api = try api
        let tenant = try api.createProject(extra: [("allow_xcode", true), ("environments", ["Production"])])
        try api.mapProduct(tenant)
        let r = try api.postReceipt(tenant.publicKey, try xcodeSigned(TransactionPayload(bundleId: tenant.bundleId)),
                                    user: "dev")
        assertError(r, 400, "ENVIRONMENT_NOT_ALLOWED")
        XCTAssertEqual(try r.json()["error"]?.stringValue?.hasSuffix(
            "Xcode (StoreKit Testing) data needs allow_xcode and Sandbox among the project's environments"), true,
                       r.description)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 0)
    }

    func testATransactionIdRecordedWithAnotherIdentityIs409AndWritesNothing() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let real = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try real.mint(), user: "alice").status, 201)
        func rows() throws -> [String] {
            try db.query("""
                SELECT to_jsonb(t)::text AS j FROM transactions t WHERE project_id = \(tenant.id)::uuid
                UNION ALL SELECT to_jsonb(p)::text FROM purchases p WHERE project_id = \(tenant.id)::uuid
                UNION ALL SELECT to_jsonb(s)::text FROM subscriptions s WHERE project_id = \(tenant.id)::uuid
                ORDER BY 1
                """).map { try $0.decode("j", as: String.self) }
        }
        let before = try rows()
        var other = real
        other.productId = "com.e2e.pro.yearly"
        other.signedDate = E2E.ms(0)
        let r = try api.postReceipt(tenant.publicKey, try other.mint(), user: "mallory")
        assertError(r, 409, "TRANSACTION_CONFLICT")
        XCTAssertEqual(try r.json()["suggestion"]?.stringValue?.contains("nothing was written"), true, r.description)
        XCTAssertEqual(try rows(), before)
        let stderr = try server.stderr
        let logged = try stderr.split(separator: "\n").filter { $0.contains("TRANSACTION_CONFLICT") }
            .map { try JSONParser.parse(Array($0.utf8)) }
        let line = try XCTUnwrap(logged.last, stderr)
        XCTAssertEqual(line["status"], 409)
        let error = line["error"]?.stringValue ?? ""
        XCTAssertTrue(error.lowercased().contains("project \(tenant.id.lowercased())"), error)
        XCTAssertTrue(error.contains("transaction \(real.transactionId), differing fields: product_id"), error)
    }

    func testForgedNotificationTypesAndMethodsAddNoMetricSeries() throws {
        let api = try api
        let tenant = try api.createProject(extra: [("allow_xcode", true)])
        for n in 0..<3 {
            var forged = NotificationPayload("FORGED_TYPE_\(n)", "FORGED_SUBTYPE_\(n)", bundleId: tenant.bundleId)
            forged.environment = "Xcode"
            try api.deliver(tenant.publicKey, forged)
        }
        var test = NotificationPayload("TEST", bundleId: tenant.bundleId)
        test.environment = "Xcode"
        try api.deliver(tenant.publicKey, test)
        for n in 0..<3 {
            XCTAssertEqual(try api.client.request("FORGED\(n)", "/healthz").status, 405)
        }
        let metrics = try api.client.get("/metrics", headers: ["Authorization": "Bearer \(Self.metricsToken)"])
        XCTAssertEqual(metrics.status, 200, metrics.description)
        let text = String(decoding: metrics.body, as: UTF8.self)
        XCTAssertFalse(text.contains("FORGED"), text)
        XCTAssertTrue(text.contains(#"bouncer_notifications_total{type="unknown",subtype="unknown"} 3"#), text)
        XCTAssertTrue(text.contains(#"bouncer_notifications_total{type="TEST",subtype="none"} 1"#), text)
        XCTAssertTrue(text.contains(#"bouncer_http_requests_total{route="<unmatched>",method="other",status="405"} 3"#), text)
    }
}
