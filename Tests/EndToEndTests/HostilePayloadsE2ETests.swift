import Foundation
import JSON
import XCTest

/// Validly signed but hostile or odd payloads, and odd-but-legal requests: always a 4xx or a correct 201, never a
/// 5xx, and nothing stored on refusal.
extension ContractE2ETests {
    func testSignedMalformedPayloadsAreRefusedWithoutRows() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let base = TransactionPayload(bundleId: tenant.bundleId)
        var cases: [(String, JSONValue)] = [
            ("empty object", [:]),
            ("array", [1, 2]),
            ("string", "hello"),
            ("null", nil),
        ]
        for field in ["transactionId", "originalTransactionId", "productId", "purchaseDate", "environment", "bundleId"] {
            var object = base.json.objectValue ?? JSONObject()
            object[field] = nil
            cases.append(("without \(field)", .object(object)))
        }
        for (field, value) in [("transactionId", JSONValue(5)), ("purchaseDate", "yesterday"), ("expiresDate", "soon"),
                               ("expiresDate", 1.5e300),
                               ("environment", "Staging"), ("bundleId", 42)] as [(String, JSONValue)] {
            var object = base.json.objectValue ?? JSONObject()
            object[field] = value
            cases.append(("\(field) = \(value)", .object(object)))
        }
        for (name, payload) in cases {
            let r = try api.postReceipt(tenant.publicKey, try E2E.mint(payload), user: "hostile")
            XCTAssertTrue((400..<500).contains(r.status), "\(name): \(r)")
            XCTAssertNotNil(try? r.json()["code"]?.stringValue, "\(name): \(r)")
        }
        for table in ["transactions", "purchases", "subscriptions"] {
            XCTAssertEqual(try db.count(table, project: tenant.id), 0, table)
        }
    }

    func testExtremeButValidDates() throws {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        var farFuture = TransactionPayload(bundleId: tenant.bundleId)
        farFuture.expiresDate = 253_402_300_799_999  // 9999-12-31T23:59:59.999Z
        let r = try api.postReceipt(tenant.publicKey, try farFuture.mint(), user: "far")
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json()["expires_date"], "9999-12-31T23:59:59.999Z")
        XCTAssertEqual(try api.user(tenant.publicKey, "far").json()["subscriptions"]?[0]?["current_period_end"],
                       "9999-12-31T23:59:59.999Z")

        var epoch = TransactionPayload(bundleId: tenant.bundleId)
        epoch.purchaseDate = 0
        epoch.originalPurchaseDate = 0
        epoch.expiresDate = 1
        let old = try api.postReceipt(tenant.publicKey, try epoch.mint(), user: "epoch")
        XCTAssertEqual(old.status, 201, old.description)
        XCTAssertEqual(try old.json()["expires_date"], "1970-01-01T00:00:00.001Z")
        XCTAssertEqual(try old.json()["status"], "expired")
    }

    func testRequestVariantsClientsSend() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let path = "/v1/receipts/\(tenant.publicKey)"
        for contentType in ["application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8"] {
            let payload = TransactionPayload(bundleId: tenant.bundleId)
            let body = Array(E2E.receiptBody(try payload.mint(), user: "variant").serializedString().utf8)
            let r = try api.client.request("POST", path, headers: ["Content-Type": contentType], body: body)
            XCTAssertEqual(r.status, 201, "\(contentType): \(r)")
        }
        // Unknown fields are ignored; pretty-printed JSON is fine.
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        let pretty = "{\n  \"signed_transaction_info\" : \"\(try payload.mint())\",\n  \"user_id\" : \"variant\",\n  \"app_version\" : \"1.2\"\n}\n"
        let r = try api.client.request("POST", path, headers: ["Content-Type": "application/json"], body: Array(pretty.utf8))
        XCTAssertEqual(r.status, 201, r.description)

        // Over-long and empty user ids are validation errors with nothing stored.
        let before = try db.count("transactions", project: tenant.id)
        for user in [String(repeating: "u", count: 257), ""] {
            let refused = try api.postReceipt(tenant.publicKey, try TransactionPayload(bundleId: tenant.bundleId).mint(), user: user)
            assertError(refused, 400, "VALIDATION_ERROR")
            XCTAssertEqual(try refused.json()["details"]?[0]?["path"], ["user_id"], refused.description)
        }
        XCTAssertEqual(try db.count("transactions", project: tenant.id), before)
        XCTAssertEqual(try api.user(tenant.publicKey, "variant").json()["subscriptions"]?.arrayValue?.count, 4)
    }
}
