import Foundation
import JSON
import Postgres
import XCTest

/// StoreKit 1 app receipts posted as a StoreKit 1 SDK posts them (`{"receipt_data": "<base64>"}`) to a server with
/// the bundled Apple roots: the two real receipts of Tests/Fixtures/apple/test-vectors verify locally (chain at their creation
/// date, status at the server's real now), every in-app record becomes one `transactions` row with source `receipt`,
/// exactly once; tampered, foreign and disallowed receipts are refused with their code and write nothing.
final class AppReceiptE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "receipts" }
    override class var serverOverrides: [String: String?] { ["BOUNCER_ROOT_CERTIFICATES": nil] }

    static func receipt(_ name: String) throws -> String {
        try String(contentsOf: E2EPaths.vectors.appendingPathComponent(name), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static let receipt2025 = "legacy-receipt-sandbox-2025-sha256-g5.b64"
    static let receipt2020 = "legacy-receipt-sandbox-2020-sha1.b64"

    func post(_ client: RawHTTPClient, _ key: String, _ receipt: String, user: String? = nil) throws -> HTTPResponse {
        var pairs: [(String, JSONValue)] = [("receipt_data", .string(receipt))]
        if let user { pairs.append(("user_id", .string(user))) }
        return try client.post("/v1/receipts/\(key)", json: .object(JSONObject(pairs)))
    }

    /// (transaction id, source) of every row of the project, by transaction id.
    func rows(_ db: E2EDatabase, _ project: String) throws -> [(String, String)] {
        try db.query("""
            SELECT transaction_id, source FROM transactions WHERE project_id = \(project)::uuid ORDER BY transaction_id
            """).map { (try $0.decode("transaction_id", as: String.self), try $0.decode("source", as: String.self)) }
    }

    func testRealSHA256ReceiptGrantsThroughTheSamePathAsAJWSExactlyOnce() throws {
        let (server, db) = try Self.shared.get()
        let api = API(client: server.client)
        let tenant = try api.createProject(bundleId: "dev.bonzer.weeka.app", extra: [("environments", ["Sandbox"])])
        try api.mapProduct(tenant, "dev.bonzer.weeka.app.subscription.pro.annual", ["pro"])
        let receipt = try Self.receipt(Self.receipt2025)

        let expected: JSONValue = [
            "valid": true, "transaction_id": "2000001092148094", "original_transaction_id": "2000001092134138",
            "product_id": "dev.bonzer.weeka.app.subscription.pro.annual",
            // Both periods ended in December 2025: verified, recorded, granting nothing now.
            "entitlements": [], "expires_date": "2025-12-26T18:55:07.000Z", "status": "expired", "environment": "Sandbox",
            "transactions": [
                ["transaction_id": "2000001092134138", "original_transaction_id": "2000001092134138",
                 "product_id": "dev.bonzer.weeka.app.subscription.pro.annual", "purchase_date": "2025-12-26T17:43:07.000Z",
                 "expires_date": "2025-12-26T18:19:07.000Z", "status": "expired"],
                ["transaction_id": "2000001092148094", "original_transaction_id": "2000001092134138",
                 "product_id": "dev.bonzer.weeka.app.subscription.pro.annual", "purchase_date": "2025-12-26T18:19:07.000Z",
                 "expires_date": "2025-12-26T18:55:07.000Z", "status": "expired"],
            ],
        ]
        let first = try post(server.client, tenant.publicKey, receipt, user: "sk1-user")
        XCTAssertEqual(first.status, 201, first.description + "\n" + server.stderr)
        XCTAssertEqual(try first.json(), expected)
        let want = [("2000001092134138", "receipt"), ("2000001092148094", "receipt")]
        XCTAssertEqual(try rows(db, tenant.id).map { "\($0.0)/\($0.1)" }, want.map { "\($0.0)/\($0.1)" })
        XCTAssertEqual(try db.count("purchases", project: tenant.id), 1)

        // Exactly once: the same receipt again leaves the same rows and gives the same answer.
        let again = try post(server.client, tenant.publicKey, receipt, user: "sk1-user")
        XCTAssertEqual(again.status, 201, again.description)
        XCTAssertEqual(try again.json(), expected)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 2)

        // The payload kept is the decoded record, the source and the receipt it came from.
        let payload = try XCTUnwrap(db.query("""
            SELECT payload::text AS p FROM transactions WHERE project_id = \(tenant.id)::uuid AND transaction_id = '2000001092148094'
            """).first?.decode("p", as: String.self))
        let json = try JSONParser.parse(Array(payload.utf8))
        XCTAssertEqual(json["source"], "receipt")
        XCTAssertEqual(json["receipt_creation_date"], "2025-12-26T18:39:47Z")
        XCTAssertEqual(json["expires_date_ms"], JSONValue(Int64(1_766_775_307_000)))
        XCTAssertEqual(json["web_order_line_item_id"]?.stringValue?.isEmpty, false)

        // The user is bound like after a JWS: the subscription shows, expired.
        let user = try api.user(tenant.publicKey, "sk1-user").json()
        XCTAssertEqual(user["status"], "expired")
        XCTAssertEqual(user["subscriptions"]?[0]?["original_transaction_id"], "2000001092134138")
    }

    func testRealSHA1ReceiptWith187RecordsNeedsTheLargerBodyLimit() throws {
        let (server, db) = try Self.shared.get()
        let api = API(client: server.client)
        let tenant = try api.createProject(bundleId: "com.nutcall.alert", extra: [("environments", ["Sandbox"])])
        for product in ["com.nutcallalert.inapp.optimum", "com.nutcallalert.inapp.pro", "com.nutcallalert.inapp.lite"] {
            try api.mapProduct(tenant, product, ["premium"])
        }
        let receipt = try Self.receipt(Self.receipt2020)
        XCTAssertGreaterThan(receipt.utf8.count, 100 * 1024, "the body exceeds the 64 KiB default of other routes")

        let r = try post(server.client, tenant.publicKey, receipt, user: "nutcall-user")
        XCTAssertEqual(r.status, 201, r.description + "\n" + server.stderr)
        let body = try r.json()
        XCTAssertEqual(body["transaction_id"], "1000000661019370")
        XCTAssertEqual(body["original_transaction_id"], "1000000603177571")
        XCTAssertEqual(body["product_id"], "com.nutcallalert.inapp.pro")
        XCTAssertEqual(body["expires_date"], "2020-05-06T18:31:31.000Z")
        XCTAssertEqual(body["status"], "expired")
        XCTAssertEqual(body["entitlements"], [])
        XCTAssertEqual(body["environment"], "Sandbox")
        XCTAssertEqual(body["transactions"]?.arrayValue?.count, 187)
        XCTAssertEqual(body["transactions"]?[0]?["transaction_id"], "1000000637840752")
        XCTAssertEqual(body["transactions"]?[186]?["transaction_id"], "1000000637840616")

        let stored = try rows(db, tenant.id)
        XCTAssertEqual(stored.count, 187)
        XCTAssertTrue(stored.allSatisfy { $0.1 == "receipt" })
        XCTAssertEqual(try db.count("purchases", project: tenant.id), 1)
        let latest = try XCTUnwrap(db.query("""
            SELECT latest_transaction_id, product_id FROM purchases WHERE project_id = \(tenant.id)::uuid
            """).first)
        XCTAssertEqual(try latest.decode("latest_transaction_id", as: String.self), "1000000661019370")
        XCTAssertEqual(try latest.decode("product_id", as: String.self), "com.nutcallalert.inapp.pro")

        XCTAssertEqual(try post(server.client, tenant.publicKey, receipt, user: "nutcall-user").status, 201)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 187)
    }

    func testRefusedReceiptsNameTheirCodeAndWriteNothing() throws {
        let (server, db) = try Self.shared.get()
        let api = API(client: server.client)
        let tenant = try api.createProject(bundleId: "dev.bonzer.weeka.app", extra: [("environments", ["Sandbox"])])
        let receipt = try Self.receipt(Self.receipt2025)
        var der = try XCTUnwrap(Data(base64Encoded: receipt)).map { $0 }

        // One byte flipped inside the signed content (the bundle id): the signature no longer verifies.
        let needle = Array("dev.bonzer.weeka.app".utf8)
        let at = try XCTUnwrap((0...(der.count - needle.count)).first { Array(der[$0..<($0 + needle.count)]) == needle })
        der[at + 4] ^= 0x01
        let tampered = Data(der).base64EncodedString()
        let checks: [(String, HTTPResponse, String, String)] = [
            ("tampered", try post(server.client, tenant.publicKey, tampered, user: "u"), "RECEIPT_VERIFICATION_FAILED", "signature"),
            ("not base64", try post(server.client, tenant.publicKey, "not a receipt!", user: "u"), "INVALID_RECEIPT_FORMAT", "format"),
            ("a JWS", try post(server.client, tenant.publicKey, "eyJh.eyJi.c2ln", user: "u"), "INVALID_RECEIPT_FORMAT", "format"),
            ("truncated", try post(server.client, tenant.publicKey, Data(der.prefix(der.count / 2)).base64EncodedString()),
             "INVALID_RECEIPT_FORMAT", "format"),
        ]
        for (name, r, code, step) in checks {
            assertError(r, 400, code)
            let json = try r.json()
            XCTAssertEqual(json["suggestion"]?.stringValue?.isEmpty, false, name)
            XCTAssertEqual(json["details"]?[0]?["path"], ["receipt_data"], name)
            XCTAssertEqual(json["details"]?[0]?["step"], .string(step), name)
        }
        // Another app's receipt, and a Production-only project.
        let other = try api.createProject(bundleId: "com.nutcall.alert.other", extra: [("environments", ["Sandbox"])])
        let foreign = try post(server.client, other.publicKey, receipt)
        assertError(foreign, 400, "BUNDLE_ID_MISMATCH")
        XCTAssertEqual(try foreign.json()["details"]?[0]?["step"], "claims")
        let production = try api.createProject(bundleId: "dev.bonzer.weeka.app", extra: [("environments", ["Production"])])
        assertError(try post(server.client, production.publicKey, receipt), 400, "ENVIRONMENT_NOT_ALLOWED")

        for project in [tenant.id, other.id, production.id] {
            XCTAssertEqual(try db.count("transactions", project: project), 0)
            XCTAssertEqual(try db.count("purchases", project: project), 0)
        }
    }

    func testExactlyOneInputAndTheBodyLimitIsPerRoute() throws {
        let (server, _) = try Self.shared.get()
        let api = API(client: server.client)
        let tenant = try api.createProject(bundleId: "dev.bonzer.weeka.app", extra: [("environments", ["Sandbox"])])
        let both = try server.client.post("/v1/receipts/\(tenant.publicKey)",
                                          json: ["receipt_data": "AAAA", "signed_transaction_info": "a.b.c"])
        assertError(both, 400, "VALIDATION_ERROR")
        let paths = try both.json()["details"]?.arrayValue?.compactMap { $0["path"]?[0]?.stringValue }
        XCTAssertEqual(paths, ["signed_transaction_info", "receipt_data"])

        // ~900 KB: accepted by POST /v1/receipts (then judged: not a receipt), refused with 413 elsewhere.
        let big = String(repeating: "A", count: 900 * 1024)
        let receipts = try post(server.client, tenant.publicKey, big)
        assertError(receipts, 400, "INVALID_RECEIPT_FORMAT")
        let elsewhere = try server.client.post("/v1/app-transactions/\(tenant.publicKey)",
                                               json: ["signed_app_transaction": .string(big)])
        XCTAssertEqual(elsewhere.status, 413, elsewhere.description)
        XCTAssertEqual(try elsewhere.json()["code"], "PAYLOAD_TOO_LARGE")
    }

    func testPostedJWSIsRecordedWithSourceTransaction() throws {
        let (server, db) = try Self.shared.get()
        let api = API(client: server.client)
        let tenant = try api.createProject(bundleId: "com.loki-project.loki-messenger", extra: [("environments", ["Sandbox"])])
        let jws = try String(contentsOf: E2EPaths.vectors.appendingPathComponent("sandbox-2025-DID_RENEW-nested-transaction.jws"),
                             encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, jws).status, 201)
        XCTAssertEqual(try rows(db, tenant.id).map(\.1), ["transaction"])
    }
}
