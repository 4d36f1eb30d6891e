import JSON
import TestSupport
import XCTest

/// Group commit (`BOUNCER_RECEIPT_BATCH_MAX`, on by default): concurrent `POST /v1/receipts` with accepted and
/// refused receipts mixed; each request gets its own status, as if it had been alone.
extension ContractE2ETests {
    func testConcurrentReceiptsWithRefusalsMixedInGetEachItsOwnStatus() throws {
        let api = try api
        let db = try db
        let project = try api.createProject(extra: [("transfer_policy", "block")])
        try api.mapProduct(project)
        // holder owns `held`; `stored` is recorded with its product, and a JWS reusing its id with another product
        // contradicts it (409 TRANSACTION_CONFLICT).
        let held = try TransactionPayload(bundleId: project.bundleId).mint()
        XCTAssertEqual(try api.client.post("/v1/receipts/\(project.publicKey)", json: E2E.receiptBody(held, user: "holder")).status, 201)
        var stored = TransactionPayload(bundleId: project.bundleId)
        XCTAssertEqual(try api.client.post("/v1/receipts/\(project.publicKey)",
                                           json: E2E.receiptBody(try stored.mint(), user: "stored-owner")).status, 201)
        stored.productId = "com.e2e.other"
        let contradicting = try stored.mint()
        let fresh = try (0..<16).map { _ in try TransactionPayload(bundleId: project.bundleId).mint() }

        // 24 posts released together: i % 3 == 1 claims `held` (409 owned by another user), i == 2 and 14 post the
        // contradicting JWS (409 conflict), every other one its own new purchase (201).
        func expected(_ i: Int) -> (Int, String?) {
            if i % 3 == 1 { return (409, "PURCHASE_OWNED_BY_ANOTHER_USER") }
            if i == 2 || i == 14 { return (409, "TRANSACTION_CONFLICT") }
            return (201, nil)
        }
        let bodies: [JSONValue] = (0..<24).map { i in
            if i % 3 == 1 { return E2E.receiptBody(held, user: "claimer-\(i)") }
            if i == 2 || i == 14 { return E2E.receiptBody(contradicting, user: "stored-owner") }
            return E2E.receiptBody(fresh[i / 3 * 2 + (i % 3 == 0 ? 0 : 1)], user: "buyer-\(i)")
        }
        let client = try server.client
        let responses = onThreads(24) { i in
            Result { try client.post("/v1/receipts/\(project.publicKey)", json: bodies[i]) }
        }

        for i in 0..<24 {
            let response = try XCTUnwrap(responses[i]).get()
            let (status, code) = expected(i)
            XCTAssertEqual(response.status, status, "post \(i): \(response.description)")
            if let code { XCTAssertEqual(try response.json()["code"], .string(code), "post \(i)") }
        }
        // Exactly the accepted rows: the two setup purchases plus 14 new ones, each bound to its buyer.
        XCTAssertEqual(try db.count("transactions", project: project.id), 16)
        XCTAssertEqual(try db.count("subscriptions", project: project.id), 16)
        for i in 0..<24 where expected(i).0 == 201 {
            XCTAssertEqual(try api.user(project.publicKey, "buyer-\(i)").json()["entitlements"], ["pro"], "buyer \(i)")
        }
        XCTAssertEqual(try api.user(project.publicKey, "claimer-1").json()["entitlements"], [])
    }
}
