import Foundation
import JSON
import Postgres
import XCTest

/// Set App Account Token (`PUT /v1/admin/projects/{id}/purchases/{originalTransactionId}/app-account-token`) over the
/// real `bouncer serve`, real PostgreSQL and the fake Apple over TLS serving the endpoint as Apple documents it.
final class AppAccountTokenE2ETests: AppleConnectedTestCase {
    override class func connect() throws -> AppleConnectedBouncer {
        try AppleConnectedBouncer(label: "apptoken", overrides: ["BOUNCER_APPLE_API_TIMEOUT_SECONDS": "3"])
    }

    private func tenant() throws -> Tenant {
        try Self.fixture.get().createProject(settings: [("app_account_token_policy", "prefer")], keyId: "APPTOKEN01").0
    }

    /// A Production purchase held by `user`.
    private func purchase(_ tenant: Tenant, user: String) throws -> TransactionPayload {
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.environment = "Production"
        let r = try api.postReceipt(tenant.publicKey, try payload.mint(), user: user)
        XCTAssertEqual(r.status, 201, r.description)
        return payload
    }

    private func setToken(_ tenant: Tenant, _ original: String, _ token: String) throws -> HTTPResponse {
        try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/purchases/\(original)/app-account-token",
                            json: ["app_account_token": .string(token)], headers: E2E.admin)
    }

    private func audits(_ tenant: Tenant) throws -> [String] {
        try db.query("""
            SELECT action || ' ' || target || ' ' || changes::text AS e FROM audit_log
            WHERE project_id = \(tenant.id)::uuid AND action = 'purchase.set_app_account_token' ORDER BY at
            """).map { try $0.decode("e", as: String.self) }
    }

    private func holders(_ tenant: Tenant, _ original: String) throws -> [String] {
        try db.query("""
            SELECT user_id FROM subscriptions WHERE project_id = \(tenant.id)::uuid
              AND original_transaction_id = \(original) AND revoked_at IS NULL ORDER BY user_id
            """).map { try $0.decode("user_id", as: String.self) }
    }

    func testAppleSetsTheTokenAndTheReSignedTransactionBindsThePurchaseToItsUser() throws {
        let t = try tenant()
        let bought = try purchase(t, user: "offer-code-user")
        let token = UUID().uuidString.lowercased()
        var resigned = bought
        resigned.appAccountToken = token
        resigned.signedDate += 1000
        try apple.allowAppAccountToken(bought.originalTransactionId, environment: .production)
        try apple.setTransaction(bought.originalTransactionId, signed: try resigned.mint(), environment: .production)
        try apple.inject(.serverError(), on: .setAppAccountToken)   // 5xx retried

        let r = try setToken(t, bought.originalTransactionId, token.uppercased())
        XCTAssertEqual(r.status, 200, r.description)
        XCTAssertEqual(try r.json(), [
            "original_transaction_id": .string(bought.originalTransactionId), "environment": "Production",
            "app_account_token": .string(token), "transaction_recorded": true, "user_id": .string(token),
        ])
        XCTAssertEqual(try apple.appAccountTokens(environment: .production)[bought.originalTransactionId], token)
        XCTAssertEqual(try apple.requests.filter { $0.endpoint == .setAppAccountToken && $0.id == bought.originalTransactionId }
            .map(\.jsonBody), [["appAccountToken": .string(token)], ["appAccountToken": .string(token)]])
        // The signed token is recorded, and the purchase moved to the user it names.
        XCTAssertEqual(try db.query("""
            SELECT app_account_token::text AS t FROM transactions
            WHERE project_id = \(t.id)::uuid AND transaction_id = \(bought.transactionId)
            """).first?.decode("t", as: String?.self), .some(token))
        XCTAssertEqual(try holders(t, bought.originalTransactionId), [token])
        // The token is an account identifier: the audit log redacts it like any token.
        XCTAssertEqual(try audits(t), [
            "purchase.set_app_account_token purchase:\(bought.originalTransactionId) "
                + #"{"environment": [null, "Production"], "app_account_token": [null, "[redacted]"]}"#,
        ])
    }

    func testAFamilySharingPurchaseIsRejectedByAppleAndNothingIsRecorded() throws {
        let t = try tenant()
        let bought = try purchase(t, user: "family")
        try apple.allowAppAccountToken(bought.originalTransactionId, family: true, environment: .production)
        let r = try setToken(t, bought.originalTransactionId, UUID().uuidString)
        XCTAssertEqual(r.status, 502, r.description)
        XCTAssertEqual(try r.json()["code"], "APPLE_REQUEST_REJECTED")
        XCTAssertEqual(try audits(t), [])
        XCTAssertEqual(try holders(t, bought.originalTransactionId), ["family"])
    }

    func testWhenTheFetchFailsAppleHoldsTheTokenAndNothingUnsignedIsWritten() throws {
        let t = try tenant()
        let bought = try purchase(t, user: "later")
        let token = UUID().uuidString.lowercased()
        try apple.allowAppAccountToken(bought.originalTransactionId, environment: .production)
        try apple.inject(.serverError(), on: .transactionInfo, times: nil)
        let r = try setToken(t, bought.originalTransactionId, token)
        XCTAssertEqual(r.status, 200, r.description)
        XCTAssertEqual(try r.json()["transaction_recorded"], false)
        XCTAssertEqual(try r.json()["user_id"], .null)
        XCTAssertEqual(try holders(t, bought.originalTransactionId), ["later"])
        XCTAssertEqual(try audits(t).count, 1)
    }

    func testAnUnknownPurchaseAndABadTokenAskAppleNothing() throws {
        let t = try tenant()
        let unknown = "9" + E2E.uniqueId()
        assertError(try setToken(t, unknown, UUID().uuidString), 404, "PURCHASE_NOT_FOUND")
        let bad = try setToken(t, unknown, "not-a-uuid")
        XCTAssertEqual(bad.status, 400, bad.description)
        XCTAssertEqual(try bad.json()["details"], [["path": ["app_account_token"], "message": "Must be a UUID"]])
        XCTAssertEqual(try apple.requests.filter { $0.endpoint == .setAppAccountToken && $0.id == unknown }.count, 0)
    }

    private func erase(_ t: Tenant, _ user: String, reset: Bool) throws -> HTTPResponse {
        try api.client.send("DELETE", "/v1/admin/projects/\(t.id)/users/\(user)",
                            json: ["reset_app_account_token": .bool(reset)], headers: E2E.admin)
    }

    func testEraseWithResetReKeysThePurchasesAtAppleFirst() throws {
        let t = try tenant()
        let bought = try purchase(t, user: "leaving")
        try apple.allowAppAccountToken(bought.originalTransactionId, environment: .production)
        let r = try erase(t, "leaving", reset: true)
        XCTAssertEqual(r.status, 200, r.description)
        XCTAssertEqual(try r.json()["app_account_tokens_reset"], 1)
        XCTAssertEqual(try r.json()["bindings_deleted"], 1)
        let token = try XCTUnwrap(try apple.appAccountTokens(environment: .production)[bought.originalTransactionId])
        XCTAssertNotNil(UUID(uuidString: token))
        XCTAssertEqual(try holders(t, bought.originalTransactionId), [])
        // Without the flag Apple is not asked and the answer has no such member.
        let plain = try erase(t, "leaving", reset: false)
        XCTAssertEqual(plain.status, 200, plain.description)
        XCTAssertNil(try plain.json()["app_account_tokens_reset"])
    }

    func testEraseWithResetErasesNothingWhenAppleRefuses() throws {
        let t = try tenant()
        let bought = try purchase(t, user: "family-leaving")
        try apple.allowAppAccountToken(bought.originalTransactionId, family: true, environment: .production)
        let r = try erase(t, "family-leaving", reset: true)
        XCTAssertEqual(r.status, 502, r.description)
        XCTAssertEqual(try r.json()["code"], "APPLE_REQUEST_REJECTED")
        XCTAssertEqual(try holders(t, bought.originalTransactionId), ["family-leaving"])
    }
}
