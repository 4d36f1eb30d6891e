import Foundation
import JSON
import XCTest

/// A project created through the admin API, with the keys its creation returned.
struct Tenant {
    var id: String
    var bundleId: String
    var publicKey: String
    var secretKey: String
    /// The full 201 body of `POST /v1/admin/projects`.
    var created: JSONValue
}

/// API calls the tests repeat, against one server.
struct API {
    let client: RawHTTPClient

    /// `POST /v1/admin/projects`; fails the test unless 201.
    func createProject(bundleId: String = E2E.uniqueBundle(), name: String = "E2E app", extra: [(String, JSONValue)] = [],
                       file: StaticString = #filePath, line: UInt = #line) throws -> Tenant {
        let body = JSONValue.object(JSONObject([("name", .string(name)), ("bundle_id", .string(bundleId))] + extra))
        let r = try client.post("/v1/admin/projects", json: body, headers: E2E.admin)
        XCTAssertEqual(r.status, 201, r.description, file: file, line: line)
        let json = try r.json()
        guard let id = json["id"]?.stringValue, let pk = json["public_key"]?.stringValue,
              let sk = json["secret_key"]?.stringValue else {
            throw HarnessFailure(description: "project creation body lacks id/keys: \(r)")
        }
        return Tenant(id: id, bundleId: bundleId, publicKey: pk, secretKey: sk, created: json)
    }

    /// `PUT /v1/admin/projects/:id/products/:productId`; fails the test unless 200.
    @discardableResult
    func mapProduct(_ tenant: Tenant, _ productId: String = "com.e2e.pro.monthly", _ entitlements: [String] = ["pro"],
                    file: StaticString = #filePath, line: UInt = #line) throws -> HTTPResponse {
        let body: JSONValue = ["entitlements": .array(entitlements.map { .string($0) })]
        let r = try client.send("PUT", "/v1/admin/projects/\(tenant.id)/products/\(productId)", json: body, headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description, file: file, line: line)
        return r
    }

    /// `POST /v1/receipts/:publicKey`.
    func postReceipt(_ key: String, _ jws: String, user: String? = nil, device: String? = nil) throws -> HTTPResponse {
        try client.post("/v1/receipts/\(key)", json: E2E.receiptBody(jws, user: user, device: device))
    }

    /// `GET /v1/subscriptions/:publicKey/:userId`.
    func user(_ key: String, _ user: String, headers: [String: String] = [:]) throws -> HTTPResponse {
        try client.get("/v1/subscriptions/\(key)/\(user)", headers: headers)
    }
}

/// The receipt 201 body the contract expects for `payload` (plus our compatible `environment` extension).
func expectedReceipt(_ payload: TransactionPayload, entitlements: [String], status: String) -> JSONValue {
    [
        "valid": true,
        "transaction_id": .string(payload.transactionId),
        "original_transaction_id": .string(payload.originalTransactionId),
        "product_id": .string(payload.productId),
        "entitlements": .array(entitlements.map { .string($0) }),
        "expires_date": payload.expiresDate.map { .string(E2E.iso($0)) } ?? .null,
        "status": .string(status),
        "environment": .string(payload.environment),
    ]
}

/// Asserts an error body: exact status, code, and (when given) message and suggestion.
func assertError(_ r: HTTPResponse, _ status: Int, _ code: String, error: String? = nil, suggestion: String? = nil,
                 file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(r.status, status, r.description, file: file, line: line)
    XCTAssertEqual(r.header("Content-Type")?.hasPrefix("application/json"), true, r.description, file: file, line: line)
    guard let json = try? r.json() else {
        XCTFail("error body is not JSON: \(r)", file: file, line: line)
        return
    }
    XCTAssertEqual(json["code"]?.stringValue, code, r.description, file: file, line: line)
    XCTAssertNotNil(json["error"]?.stringValue, r.description, file: file, line: line)
    XCTAssertNotNil(json["suggestion"]?.stringValue, r.description, file: file, line: line)
    if let error { XCTAssertEqual(json["error"]?.stringValue, error, file: file, line: line) }
    if let suggestion { XCTAssertEqual(json["suggestion"]?.stringValue, suggestion, file: file, line: line) }
    XCTAssertNotNil(r.header("X-Request-Id"), file: file, line: line)
    XCTAssertEqual(json["request_id"]?.stringValue, r.header("X-Request-Id"), "request_id is the X-Request-Id header",
                   file: file, line: line)
}
