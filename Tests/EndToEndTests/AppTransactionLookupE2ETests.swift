import Foundation
import JSON
import Postgres
import XCTest

/// Get App Transaction Info behind `POST /v1/app-transactions/:publicKey` with `{transaction_id, user_id}`: the real
/// `bouncer serve`, real PostgreSQL and the fake Apple over TLS serving the endpoint as Apple documents it. Apple's
/// signed AppTransaction is verified and stored under the same rules as a posted one.
final class AppTransactionLookupE2ETests: AppleConnectedTestCase {
    override class func connect() throws -> AppleConnectedBouncer {
        try AppleConnectedBouncer(label: "applookup", overrides: ["BOUNCER_APPLE_API_TIMEOUT_SECONDS": "3"])
    }

    private func tenant() throws -> Tenant {
        try Self.fixture.get().createProject(
            settings: [("app_purchase_entitlements", ["purchased_before_version": "2.0", "entitlements": ["legacy"]])],
            keyId: "APPTXLOOK1").0
    }

    private func lookUp(_ tenant: Tenant, _ transactionId: String, user: String? = nil, secret: Bool = true,
                        extra: [(String, JSONValue)] = []) throws -> HTTPResponse {
        var pairs: [(String, JSONValue)] = [("transaction_id", .string(transactionId))] + extra
        if let user { pairs.append(("user_id", .string(user))) }
        return try api.client.post("/v1/app-transactions/\(tenant.publicKey)", json: .object(JSONObject(pairs)),
                                   headers: secret ? ["Authorization": "Bearer \(tenant.secretKey)"] : [:])
    }

    private func row(_ tenant: Tenant, _ id: String) throws -> Row? {
        try db.query("""
            SELECT user_id, environment, original_application_version FROM app_transactions
            WHERE project_id = \(tenant.id)::uuid AND app_transaction_id = \(id)
            """).first
    }

    private func asked(_ transactionId: String) throws -> [FakeAppleServer.Environment?] {
        try apple.requests.filter { $0.endpoint == .appTransactionInfo && $0.id == transactionId }.map(\.environment)
    }

    func testATransactionIdFetchesVerifiesAndStoresTheAppTransactionBoundToTheUser() throws {
        let t = try tenant()
        var payload = AppTransactionPayload(bundleId: t.bundleId)
        payload.receiptType = "Production"
        let transactionId = "3000" + E2E.uniqueId()
        try apple.setAppTransaction(signed: try payload.mint(), forTransactionIds: [transactionId], environment: .production)

        let r = try lookUp(t, transactionId, user: "alice")
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json(), [
            "app_transaction_id": .string(payload.appTransactionId), "bundle_id": .string(t.bundleId),
            "environment": "Production", "original_application_version": "1.9",
            "original_purchase_date": .string(E2E.iso(payload.originalPurchaseDate)), "entitlements": ["legacy"],
            "consent_rescinded_at": nil,
        ])
        let stored = try XCTUnwrap(try row(t, payload.appTransactionId))
        XCTAssertEqual(try stored.decode("user_id", as: String?.self), "alice")
        XCTAssertEqual(try stored.decode("environment", as: String.self), "Production")
        XCTAssertEqual(try asked(transactionId), [.production])
    }

    func testProductionNotFoundFallsBackToSandboxAnd429IsWaitedFor() throws {
        let t = try tenant()
        let payload = AppTransactionPayload(bundleId: t.bundleId)   // Sandbox
        let transactionId = "3100" + E2E.uniqueId()
        try apple.setAppTransaction(signed: try payload.mint(), forTransactionIds: [transactionId], environment: .sandbox)
        try apple.inject(.rateLimited(retryAfter: 1), on: .appTransactionInfo, environment: .sandbox)

        let r = try lookUp(t, transactionId)
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json()["environment"], "Sandbox")
        XCTAssertEqual(try row(t, payload.appTransactionId)?.decode("user_id", as: String?.self), .some(nil))
        XCTAssertEqual(try asked(transactionId), [.production, .sandbox, .sandbox])
    }

    func testBindingAUserByTransactionIdNeedsTheSecretKeyAndAsksAppleNothing() throws {
        let t = try tenant()
        let transactionId = "3200" + E2E.uniqueId()
        let r = try lookUp(t, transactionId, user: "mallory", secret: false)
        assertError(r, 401, "AUTH_SECRET_KEY_REQUIRED", suggestion: "A transaction id does not prove who the customer is: "
            + "to bind user_id to the app transaction Apple returns, call from your backend with Authorization: Bearer "
            + "sk_... (or post signed_app_transaction from the device).")
        XCTAssertEqual(try asked(transactionId), [])
    }

    func testAForgedAnswerIsRefusedAndNothingIsStored() throws {
        let t = try tenant()
        var payload = AppTransactionPayload(bundleId: t.bundleId)
        payload.receiptType = "Production"
        let transactionId = "3300" + E2E.uniqueId()
        try apple.setAppTransaction(signed: try FakeAppleServer.forge(payload.json.serializedString()),
                                    forTransactionIds: [transactionId], environment: .production)
        let r = try lookUp(t, transactionId, user: "alice")
        XCTAssertEqual(r.status, 400, r.description)
        XCTAssertEqual(try r.json()["code"]?.stringValue, "JWS_VERIFICATION_FAILED", r.description)
        XCTAssertNil(try row(t, payload.appTransactionId))
    }

    func testApplePersistently500Is503AndUnknownEverywhereIs404() throws {
        let t = try tenant()
        let transactionId = "3400" + E2E.uniqueId()
        try apple.inject(.serverError(), on: .appTransactionInfo, times: nil)
        let down = try lookUp(t, transactionId)
        assertError(down, 503, "APPLE_UNAVAILABLE",
                    suggestion: "Retry after the delay in Retry-After. This says nothing about the purchase.")
        XCTAssertGreaterThan(try asked(transactionId).count, 1)   // 5xx retried
        try apple.clearFailures()
        let unknown = try lookUp(t, "3500" + E2E.uniqueId())
        XCTAssertEqual(unknown.status, 404, unknown.description)
        XCTAssertEqual(try unknown.json()["code"], "TRANSACTION_NOT_FOUND")
    }

    func testBothInputsAreAValidationError() throws {
        let t = try tenant()
        let r = try lookUp(t, "1", extra: [("signed_app_transaction", "a.b.c")])
        XCTAssertEqual(r.status, 400, r.description)
        XCTAssertEqual(try r.json()["details"], [
            ["path": ["signed_app_transaction"], "message": "Provide exactly one of signed_app_transaction and transaction_id"],
            ["path": ["transaction_id"], "message": "Provide exactly one of signed_app_transaction and transaction_id"],
        ])
    }
}
