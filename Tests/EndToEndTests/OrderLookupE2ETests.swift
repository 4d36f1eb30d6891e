import Foundation
import JSON
import XCTest

/// Support's search by order id (`GET /v1/admin/projects/{id}/orders/{orderId}`) over the real `bouncer serve`, real
/// PostgreSQL and the fake Apple over real TLS serving Look Up Order ID as Apple documents it.
final class OrderLookupE2ETests: AppleConnectedTestCase {
    override class func connect() throws -> AppleConnectedBouncer {
        try AppleConnectedBouncer(label: "orders", overrides: ["BOUNCER_APPLE_API_TIMEOUT_SECONDS": "3"])
    }

    /// A project of the Default account (named: a test below adds a second account to the shared server).
    private func tenant() throws -> (Tenant, FakeAppleServer.Key) {
        let accounts = try api.client.get("/v1/admin/accounts", headers: E2E.admin).json()["accounts"]?.arrayValue ?? []
        let defaultAccount = try XCTUnwrap(accounts.first { $0["name"]?.stringValue == "Default" }?["id"])
        return try Self.fixture.get().createProject(settings: [("account_id", defaultAccount)], keyId: "ORDERS0001")
    }

    /// A fresh order id (the fake is shared by the class's tests).
    private func orderId() -> String { "MK" + String(UInt64.random(in: 10_000_000...99_999_999)) }

    private func order(_ projectId: String, _ orderId: String, headers: [String: String] = E2E.admin) throws -> HTTPResponse {
        try api.client.get("/v1/admin/projects/\(projectId)/orders/\(orderId)", headers: headers)
    }

    private func production(_ tenant: Tenant, productId: String = "com.e2e.pro.monthly") -> TransactionPayload {
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.environment = "Production"
        payload.productId = productId
        return payload
    }

    private static func listed(_ payload: TransactionPayload, status: String) -> JSONValue {
        ["transaction_id": .string(payload.transactionId), "original_transaction_id": .string(payload.originalTransactionId),
         "product_id": .string(payload.productId), "purchase_date": .string(E2E.iso(payload.purchaseDate)),
         "expires_date": payload.expiresDate.map { .string(E2E.iso($0)) } ?? .null, "status": .string(status)]
    }

    func testAValidOrderListsItsVerifiedTransactionsAndTheirHoldersAndStoresNothing() throws {
        let (tenant, key) = try tenant()
        let held = production(tenant)
        var lifetime = production(tenant, productId: "com.e2e.lifetime")
        lifetime.type = "Non-Consumable"
        lifetime.expiresDate = nil
        let posted = try api.postReceipt(tenant.publicKey, try held.mint(), user: "alice")
        XCTAssertEqual(posted.status, 201, posted.description)
        let stored = try db.count("transactions", project: tenant.id)
        let id = orderId()
        try apple.setOrder(id, signedTransactions: [try held.mint(), try lifetime.mint()])

        let r = try order(tenant.id, id)
        XCTAssertEqual(r.status, 200, r.description)
        XCTAssertEqual(try r.json(), [
            "order_id": .string(id), "status": "valid",
            "transactions": [Self.listed(held, status: "active"), Self.listed(lifetime, status: "active")],
            "holders": [["original_transaction_id": .string(held.originalTransactionId), "user_ids": ["alice"]]],
        ])
        // A lookup, not a receipt: nothing more is stored.
        XCTAssertEqual(try db.count("transactions", project: tenant.id), stored)
        // Apple was asked once, in Production (its only environment for this endpoint), with the project's key.
        let asked = try apple.requests.filter { $0.endpoint == .lookUpOrder && $0.id == id }
        XCTAssertEqual(asked.map(\.environment), [.production])
        XCTAssertEqual(asked.map(\.jwtProblem), [nil])
        XCTAssertEqual(asked.first?.jwtClaims?["iss"], .string(key.issuerId))
    }

    func testAnInvalidOrderAnswersInvalidWithNoTransactions() throws {
        let (tenant, _) = try tenant()
        let id = orderId()
        let r = try order(tenant.id, id)
        XCTAssertEqual(r.status, 200, r.description)
        XCTAssertEqual(try r.json(), ["order_id": .string(id), "status": "invalid", "transactions": [], "holders": []])
    }

    func testATransactionThatDoesNotVerifyIsRefused() throws {
        let (tenant, _) = try tenant()
        let forged = production(tenant)
        let id = orderId()
        try apple.setOrder(id, signedTransactions: [try FakeAppleServer.forge(forged.json.serializedString())])
        let r = try order(tenant.id, id)
        XCTAssertEqual(r.status, 400, r.description)
        XCTAssertEqual(try r.json()["code"]?.stringValue, "JWS_VERIFICATION_FAILED", r.description)
    }

    func testAnInvalidOrderIdIsA400WithASuggestion() throws {
        let (tenant, _) = try tenant()
        let r = try order(tenant.id, "MK5-TTT")
        assertError(r, 400, "VALIDATION_ERROR", suggestion: "Put the order id from the customer's App Store email receipt "
            + "or purchase history (letters and digits, at most 32, e.g. MK5TTTVWJH) in the URL path.")
        XCTAssertEqual(try r.json()["details"], [["path": ["orderId"],
                                                  "message": "Must be an App Store order id (letters and digits only)"]])
        let long = try order(tenant.id, String(repeating: "A", count: 33))
        XCTAssertEqual(try long.json()["details"], [["path": ["orderId"],
                                                     "message": "String must contain at most 32 character(s)"]])
        XCTAssertTrue(try apple.requests.filter { $0.endpoint == .lookUpOrder && $0.id == "MK5-TTT" }.isEmpty)
    }

    func testAnUnknownProjectAndAnotherAccountsKeyAre404() throws {
        let (tenant, _) = try tenant()
        assertError(try order(UUID().uuidString.lowercased(), orderId()), 404, "PROJECT_NOT_FOUND")

        let account = try api.client.post("/v1/admin/accounts", json: ["name": .string("Other \(orderId())")],
                                          headers: E2E.admin)
        XCTAssertEqual(account.status, 201, account.description)
        let accountId = try XCTUnwrap(try account.json()["id"]?.stringValue)
        let created = try api.client.post("/v1/admin/accounts/\(accountId)/api-keys",
                                          json: ["name": "support", "role": "owner"], headers: E2E.admin)
        XCTAssertEqual(created.status, 201, created.description)
        let otherKey = try XCTUnwrap(try created.json()["key"]?.stringValue)
        let id = orderId()
        assertError(try order(tenant.id, id, headers: ["Authorization": "Bearer \(otherKey)"]),
                    404, "PROJECT_NOT_FOUND")
        XCTAssertTrue(try apple.requests.filter { $0.endpoint == .lookUpOrder && $0.id == id }.isEmpty)
    }

    func testApplesRefusalAndOutageAreMappedLikeTheOtherLookups() throws {
        let (tenant, _) = try tenant()
        try apple.inject(.unauthorized, on: .lookUpOrder)
        assertError(try order(tenant.id, orderId()), 502, "APP_STORE_AUTH_FAILED",
                    error: "Apple refused the project's App Store credentials.")

        try apple.inject(.serverError(status: 500), on: .lookUpOrder, times: nil)
        let outage = try order(tenant.id, orderId())
        assertError(outage, 503, "APPLE_UNAVAILABLE", error: "Apple's App Store Server API is unavailable.",
                    suggestion: "Retry after the delay in Retry-After. This says nothing about the purchase.")
        XCTAssertNotNil(outage.header("Retry-After"))
    }
}
