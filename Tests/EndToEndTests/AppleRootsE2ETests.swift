import Foundation
import JSON
import XCTest

/// A server configured like production: the bundled Apple roots (no `BOUNCER_ROOT_CERTIFICATES`) and no admin
/// token (admin API disabled), provisioned with the `bouncer` CLI.
final class AppleRootsE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "apple" }
    override class var serverOverrides: [String: String?] {
        ["BOUNCER_ROOT_CERTIFICATES": nil, "BOUNCER_ADMIN_TOKEN": nil]
    }

    // MARK: 2. ADMIN_API_DISABLED

    func testAdminAPIDisabledWithoutToken() throws {
        let client = try server.client
        for (method, path) in [("GET", "/v1/admin/projects"), ("POST", "/v1/admin/projects"),
                               ("GET", "/v1/admin/projects/00000000-0000-0000-0000-000000000000")] {
            for headers in [[:], E2E.admin] {
                let r = try client.request(method, path, headers: headers.merging(["Content-Type": "application/json"]) { a, _ in a },
                                           body: method == "POST" ? Array(#"{"name":"x","bundle_id":"com.x"}"#.utf8) : nil)
                assertError(r, 404, "ADMIN_API_DISABLED", error: "Admin API is disabled.")
            }
        }
    }

    // MARK: 9. A real Apple sandbox transaction, verified against the bundled Apple roots

    func testRealAppleSandboxTransactionIsAccepted() throws {
        let server = try server
        let db = try Self.shared.get().db
        let vector = E2EPaths.vectors.appendingPathComponent("sandbox-2025-DID_RENEW-nested-transaction.jws")
        let jws = try String(contentsOf: vector, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let payload = try E2E.payload(ofJWS: jws)
        let transactionId = try XCTUnwrap(payload["transactionId"]?.stringValue)
        let originalId = try XCTUnwrap(payload["originalTransactionId"]?.stringValue)
        let expires = try XCTUnwrap(payload["expiresDate"]?.int64Value)
        XCTAssertEqual(payload["bundleId"], "com.loki-project.loki-messenger")
        XCTAssertEqual(payload["productId"], "com.getsession.org.pro_sub")

        var env = server.environment
        env["BOUNCER_PORT"] = nil
        let create = try CLIRun.run(["project", "create", "--name", "Session", "--bundle-id", "com.loki-project.loki-messenger",
                                     "--environment", "Sandbox"], environment: env)
        XCTAssertEqual(create.status, 0, create.stderr)
        let project = try JSONParser.parse(create.stdout)
        let id = try XCTUnwrap(project["id"]?.stringValue, create.stdout)
        let publicKey = try XCTUnwrap(project["public_key"]?.stringValue)
        let product = try CLIRun.run(["product", "set", id, "com.getsession.org.pro_sub", "pro"], environment: env)
        XCTAssertEqual(product.status, 0, product.stderr)

        let api = API(client: server.client)
        let r = try api.postReceipt(publicKey, jws, user: "session-user")
        XCTAssertEqual(r.status, 201, r.description + "\n" + server.stderr)
        // The vector's period ended in 2025: valid, recorded, and not granting anything now.
        XCTAssertEqual(try r.json(), [
            "valid": true, "transaction_id": .string(transactionId), "original_transaction_id": .string(originalId),
            "product_id": "com.getsession.org.pro_sub", "entitlements": [], "expires_date": .string(E2E.iso(expires)),
            "status": "expired", "environment": "Sandbox",
        ])
        XCTAssertEqual(try db.count("transactions", project: id), 1)
        let user = try api.user(publicKey, "session-user").json()
        XCTAssertEqual(user["status"], "expired")
        XCTAssertEqual(user["subscriptions"]?[0]?["original_transaction_id"], .string(originalId))

        // The same vector is rejected by a Production-only project, and test-PKI JWS are not trusted here.
        let prod = try CLIRun.run(["project", "create", "--name", "Prod", "--bundle-id", "com.loki-project.loki-messenger",
                                   "--environment", "Production"], environment: env)
        XCTAssertEqual(prod.status, 0, prod.stderr)
        let prodKey = try XCTUnwrap(JSONParser.parse(prod.stdout)["public_key"]?.stringValue)
        assertError(try api.postReceipt(prodKey, jws, user: "u"), 400, "ENVIRONMENT_NOT_ALLOWED")
        let ours = try TransactionPayload(bundleId: "com.loki-project.loki-messenger").mint()
        assertError(try api.postReceipt(publicKey, ours, user: "u"), 400, "JWS_VERIFICATION_FAILED")
        XCTAssertEqual(try db.count("transactions", project: id), 1)
    }
}
