import Foundation
import JSON
import Synchronization
import XCTest

/// The public contract over real HTTP against one `bouncer serve` process and a fresh database (shared by the
/// class; every test creates its own projects, so tests never see each other's rows).
final class ContractE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "contract" }


    // MARK: 1. The whole contract

    func testProjectProductReceiptUserAndAdminLifecycle() throws {
        let api = try api
        let db = try db
        let bundle = E2E.uniqueBundle()

        // Create: 201 with the settings, defaults, and both keys.
        let tenant = try api.createProject(bundleId: bundle, name: "Contract app")
        let created = tenant.created
        XCTAssertEqual(Set(created.objectValue?.keys ?? []), [
            "id", "account_id", "name", "bundle_id", "app_apple_id", "environments", "transfer_policy", "allow_xcode",
            "require_secret_key_for_reads", "app_account_token_policy", "consumption_response",
            "consumption_customer_consented", "consumption_sample_content_provided", "consumption_refund_preference",
            "app_purchase_entitlements", "entitlement_tokens", "entitlement_token_ttl_seconds", "sandbox_access",
            "sandbox_allowed_user_ids", "finish_transactions", "public_key", "public_keys", "secret_keys", "created_at", "updated_at",
            "secret_key",
        ])
        XCTAssertNotNil(UUID(uuidString: tenant.id), tenant.id)
        XCTAssertEqual(created["account_id"], "00000000-0000-4000-8000-000000000001", "the only account's")
        XCTAssertEqual(created["name"], "Contract app")
        XCTAssertEqual(created["bundle_id"], .string(bundle))
        XCTAssertEqual(created["app_apple_id"], .null)
        XCTAssertEqual(created["environments"], ["Production", "Sandbox"])
        XCTAssertEqual(created["transfer_policy"], "transfer")
        XCTAssertEqual(created["allow_xcode"], false)
        XCTAssertEqual(created["require_secret_key_for_reads"], false)
        XCTAssertTrue(Self.isKey(tenant.publicKey, prefix: "pk_", hexDigits: 32), tenant.publicKey)
        XCTAssertTrue(Self.isKey(tenant.secretKey, prefix: "sk_", hexDigits: 64), tenant.secretKey)
        // The secret key is stored hashed, never as given.
        let storedPublic = try db.query("SELECT public_key FROM project_keys WHERE project_id = \(tenant.id)::uuid AND kind = 'public'")
        XCTAssertEqual(try storedPublic.map { try $0.decode("public_key", as: String.self) }, [tenant.publicKey])
        let stored = try db.query("""
            SELECT encode(secret_key_hash, 'hex') AS h FROM project_keys WHERE project_id = \(tenant.id)::uuid AND kind = 'secret'
            """)
        XCTAssertEqual(stored.count, 1)
        let hash = try XCTUnwrap(stored.first?.decode("h", as: String.self))
        XCTAssertFalse(hash.contains(String(tenant.secretKey.dropFirst(3))), "secret key stored in clear")

        // Map a product: 200 {"product_id","entitlements"}.
        let product = try api.mapProduct(tenant, "com.e2e.pro.monthly", ["pro"])
        XCTAssertEqual(try product.json(), ["product_id": "com.e2e.pro.monthly", "entitlements": ["pro"]])

        // Post a receipt: 201, the issue's body.
        var payload = TransactionPayload(bundleId: bundle)
        payload.expiresDate = E2E.ms(365 * 86_400)
        let user = "user_\(E2E.uniqueId())"
        let receipt = try api.postReceipt(tenant.publicKey, try payload.mint(), user: user, device: "device-1")
        XCTAssertEqual(receipt.status, 201, receipt.description)
        XCTAssertEqual(receipt.header("Content-Type"), "application/json")
        XCTAssertEqual(try receipt.json(), expectedReceipt(payload, entitlements: ["pro"], status: "active"))
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 1)
        XCTAssertEqual(try db.count("subscriptions", project: tenant.id), 1)
        let row = try db.query("SELECT user_id, original_transaction_id, device_id FROM subscriptions WHERE project_id = \(tenant.id)::uuid")
        XCTAssertEqual(try row.first?.decode("user_id", as: String.self), user)
        XCTAssertEqual(try row.first?.decode("original_transaction_id", as: String.self), payload.originalTransactionId)
        XCTAssertEqual(try row.first?.decode("device_id", as: String?.self), "device-1")

        // Read the user: 200, the issue's body.
        let read = try api.user(tenant.publicKey, user)
        XCTAssertEqual(read.status, 200, read.description)
        let body = try read.json()
        XCTAssertEqual(body["user_id"], .string(user))
        XCTAssertEqual(body["status"], "active")
        XCTAssertEqual(body["entitlements"], ["pro"])
        let subscriptions = try XCTUnwrap(body["subscriptions"]?.arrayValue)
        XCTAssertEqual(subscriptions.count, 1)
        XCTAssertEqual(subscriptions.first?["product_id"], "com.e2e.pro.monthly")
        XCTAssertEqual(subscriptions.first?["status"], "active")
        XCTAssertEqual(subscriptions.first?["current_period_end"], .string(E2E.iso(payload.expiresDate ?? 0)))
        XCTAssertEqual(subscriptions.first?["auto_renew_enabled"], true)
        XCTAssertEqual(subscriptions.first?["original_transaction_id"], .string(payload.originalTransactionId))

        // An unknown user is `none` with empty lists.
        let nobody = try api.user(tenant.publicKey, "nobody")
        XCTAssertEqual(nobody.status, 200)
        XCTAssertEqual(try nobody.json(), ["user_id": "nobody", "status": "none", "entitlements": [], "subscriptions": []])

        // Admin: list, show, patch.
        let list = try api.client.get("/v1/admin/projects", headers: E2E.admin)
        XCTAssertEqual(list.status, 200, list.description)
        let listed = try XCTUnwrap(list.json()["projects"]?.arrayValue?.first { $0["id"]?.stringValue == tenant.id })
        XCTAssertNil(listed["secret_key"], "list must not show the secret key")
        XCTAssertEqual(listed["public_key"], .string(tenant.publicKey))
        let show = try api.client.get("/v1/admin/projects/\(tenant.id)", headers: E2E.admin)
        XCTAssertEqual(show.status, 200, show.description)
        XCTAssertEqual(try show.json(), listed)
        let patch = try api.client.send("PATCH", "/v1/admin/projects/\(tenant.id)",
                                        json: ["name": "Renamed", "transfer_policy": "share"], headers: E2E.admin)
        XCTAssertEqual(patch.status, 200, patch.description)
        let patched = try patch.json()
        XCTAssertEqual(patched["name"], "Renamed")
        XCTAssertEqual(patched["transfer_policy"], "share")
        XCTAssertEqual(patched["bundle_id"], .string(bundle))
        XCTAssertEqual(patched["public_key"], .string(tenant.publicKey))
        XCTAssertNil(patched["secret_key"])

        // Rotate keys with grace 0: new keys answer, the old ones stop working at once (401).
        let rotate = try api.client.post("/v1/admin/projects/\(tenant.id)/rotate-keys", json: ["grace_seconds": 0],
                                         headers: E2E.admin)
        XCTAssertEqual(rotate.status, 200, rotate.description)
        let rotated = try rotate.json()
        let newPublic = try XCTUnwrap(rotated["public_key"]?.stringValue)
        let newSecret = try XCTUnwrap(rotated["secret_key"]?.stringValue)
        XCTAssertNotEqual(newPublic, tenant.publicKey)
        XCTAssertNotEqual(newSecret, tenant.secretKey)
        XCTAssertTrue(Self.isKey(newPublic, prefix: "pk_", hexDigits: 32))
        assertError(try api.user(tenant.publicKey, user), 401, "AUTH_INVALID_PUBLIC_KEY")
        assertError(try api.postReceipt(tenant.publicKey, try payload.mint(), user: user), 401, "AUTH_INVALID_PUBLIC_KEY")
        assertError(try api.user(newPublic, user, headers: ["Authorization": "Bearer \(tenant.secretKey)"]),
                    401, "AUTH_INVALID_SECRET_KEY")
        let again = try api.user(newPublic, user, headers: ["Authorization": "Bearer \(newSecret)"])
        XCTAssertEqual(again.status, 200, again.description)
        XCTAssertEqual(try again.json(), body)

        // Products: list, delete, 404 on a second delete.
        let products = try api.client.get("/v1/admin/projects/\(tenant.id)/products", headers: E2E.admin)
        XCTAssertEqual(products.status, 200)
        XCTAssertEqual(try products.json(), ["products": [["product_id": "com.e2e.pro.monthly", "entitlements": ["pro"]]]])
        let deleted = try api.client.delete("/v1/admin/projects/\(tenant.id)/products/com.e2e.pro.monthly", headers: E2E.admin)
        XCTAssertEqual(deleted.status, 204, deleted.description)
        XCTAssertEqual(deleted.body, [])
        XCTAssertEqual(try api.client.get("/v1/admin/projects/\(tenant.id)/products", headers: E2E.admin).json(), ["products": []])
        assertError(try api.client.delete("/v1/admin/projects/\(tenant.id)/products/com.e2e.pro.monthly", headers: E2E.admin),
                    404, "PRODUCT_NOT_FOUND")
        XCTAssertEqual(try db.count("products", project: tenant.id), 0)

        // Delete the project: 204, then 404, and its rows are gone.
        let gone = try api.client.delete("/v1/admin/projects/\(tenant.id)", headers: E2E.admin)
        XCTAssertEqual(gone.status, 204, gone.description)
        assertError(try api.client.get("/v1/admin/projects/\(tenant.id)", headers: E2E.admin), 404, "PROJECT_NOT_FOUND")
        assertError(try api.user(newPublic, user), 401, "AUTH_INVALID_PUBLIC_KEY")
        for table in ["transactions", "purchases", "subscriptions", "products"] {
            XCTAssertEqual(try db.count(table, project: tenant.id), 0, table)
        }
    }

    /// A non-expiring purchase answers `expires_date: null` and `active`; a revoked one `revoked` with no entitlements.
    func testLifetimeAndRevokedPurchases() throws {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant, "com.e2e.lifetime", ["lifetime"])
        var lifetime = TransactionPayload(bundleId: tenant.bundleId)
        lifetime.productId = "com.e2e.lifetime"
        lifetime.type = "Non-Consumable"
        lifetime.expiresDate = nil
        let r = try api.postReceipt(tenant.publicKey, try lifetime.mint(), user: "u1")
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json(), expectedReceipt(lifetime, entitlements: ["lifetime"], status: "active"))
        let u1 = try api.user(tenant.publicKey, "u1").json()
        XCTAssertEqual(u1["entitlements"], ["lifetime"])
        XCTAssertEqual(u1["subscriptions"]?[0]?["current_period_end"], .null)
        XCTAssertEqual(u1["subscriptions"]?[0]?["auto_renew_enabled"], false)

        try api.mapProduct(tenant)
        var revoked = TransactionPayload(bundleId: tenant.bundleId)
        revoked.revocationDate = E2E.ms(-5)
        revoked.revocationReason = 0
        let rv = try api.postReceipt(tenant.publicKey, try revoked.mint(), user: "u2")
        XCTAssertEqual(rv.status, 201, rv.description)
        XCTAssertEqual(try rv.json(), expectedReceipt(revoked, entitlements: [], status: "revoked"))
        let u2 = try api.user(tenant.publicKey, "u2").json()
        XCTAssertEqual(u2["status"], "revoked")
        XCTAssertEqual(u2["entitlements"], [])
    }

    // MARK: 2. Each error code over HTTP, and no row after any 4xx

    func testValidationErrors() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        let path = "/v1/receipts/\(tenant.publicKey)"
        let suggestion = "Request body requires signed_transaction_info (string). Optional: user_id, device_id."

        let missing = try api.client.post(path, json: ["user_id": "u"])
        XCTAssertEqual(missing.status, 400)
        XCTAssertEqual(try missing.errorFields(), [
            "error": "Validation error", "code": "VALIDATION_ERROR",
            "details": [["path": ["signed_transaction_info"], "message": "Required"]],
            "suggestion": .string(suggestion),
        ])

        let wrongType = try api.client.post(path, json: ["signed_transaction_info": 5, "user_id": true])
        assertError(wrongType, 400, "VALIDATION_ERROR", error: "Validation error", suggestion: suggestion)
        XCTAssertEqual(try wrongType.json()["details"], [
            ["path": ["signed_transaction_info"], "message": "Expected string"],
            ["path": ["user_id"], "message": "Expected string"],
        ])

        let text = try api.client.request("POST", path, headers: ["Content-Type": "text/plain"],
                                          body: Array(#"{"signed_transaction_info":"a.b.c"}"#.utf8))
        assertError(text, 415, "UNSUPPORTED_MEDIA_TYPE", suggestion: "Send the JSON body with Content-Type: application/json.")
        // What `curl -d '{...}'` sends.
        let form = try api.client.request("POST", path, headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                          body: Array(#"{"signed_transaction_info":"a.b.c"}"#.utf8))
        assertError(form, 415, "UNSUPPORTED_MEDIA_TYPE", suggestion: "Send the JSON body with Content-Type: "
            + "application/json (curl -d sends application/x-www-form-urlencoded: add -H 'Content-Type: application/json').")
        // No Content-Type at all: the JSON body is read as JSON (and reaches the verifier).
        let noType = try api.client.request("POST", path, body: Array(#"{"signed_transaction_info":"a.b.c"}"#.utf8))
        assertError(noType, 400, "INVALID_JWS_FORMAT")

        let notObject = try api.client.post(path, json: ["a.b.c"])
        assertError(notObject, 400, "VALIDATION_ERROR", suggestion: suggestion)

        let broken = try api.client.request("POST", path, headers: ["Content-Type": "application/json"],
                                            body: Array(#"{"signed_transaction_info": "#.utf8))
        assertError(broken, 400, "INVALID_JSON", suggestion: suggestion)

        for bad in ["abc", "a.b", "a..c", ".b.c", "a.b.c.d"] {
            let r = try api.postReceipt(tenant.publicKey, bad, user: "u")
            XCTAssertEqual(r.status, 400, bad)
            XCTAssertEqual(try r.errorFields(), [
                "error": "Invalid JWS format: expected 3 dot-separated parts", "code": "INVALID_JWS_FORMAT",
                "suggestion": "Provide a valid JWS string (3 dot-separated base64url parts) from StoreKit 2 Transaction.jsonRepresentation.",
                "details": [["path": ["signed_transaction_info"], "message": "expected 3 dot-separated parts", "step": "format"]],
            ], bad)
        }
        for table in ["transactions", "purchases", "subscriptions"] {
            XCTAssertEqual(try db.count(table, project: tenant.id), 0, table)
        }
    }

    func testVerificationErrorsStoreNothing() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject(extra: [("environments", ["Sandbox"])])
        try api.mapProduct(tenant)
        let good = TransactionPayload(bundleId: tenant.bundleId)
        let jws = try good.mint()
        var parts = jws.split(separator: ".").map(String.init)

        // Tampered signature: one base64url character in the middle of the signature flipped.
        var signature = Array(parts[2])
        let middle = signature.count / 2
        signature[middle] = signature[middle] == "A" ? "B" : "A"
        let tampered = [parts[0], parts[1], String(signature)].joined(separator: ".")
        let tamperedResponse = try api.postReceipt(tenant.publicKey, tampered, user: "u")
        assertError(tamperedResponse, 400, "JWS_VERIFICATION_FAILED")
        assertStep(tamperedResponse, "signature")

        // Tampered payload: another payload under the original signature.
        var other = good
        other.productId = "com.e2e.other"
        let otherParts = try other.mint().split(separator: ".").map(String.init)
        parts[1] = otherParts[1]
        assertError(try api.postReceipt(tenant.publicKey, parts.joined(separator: "."), user: "u"), 400, "JWS_VERIFICATION_FAILED")

        // A complete chain under a root the server does not trust.
        let certs = E2EPaths.untrustedCerts
        let untrusted = try E2E.mint(good.json, x5c: ["untrusted-leaf.pem", "untrusted-intermediate.pem", "untrusted-root.pem"]
            .map { certs.appendingPathComponent($0).path })
        let rejected = try api.postReceipt(tenant.publicKey, untrusted, user: "u")
        assertError(rejected, 400, "JWS_VERIFICATION_FAILED")
        XCTAssertTrue(try rejected.json()["error"]?.stringValue?.hasPrefix("JWS signature verification failed: ") == true,
                      rejected.description)
        let exactSuggestion = "The JWS signature could not be verified against Apple's certificate chain. "
            + "Ensure you are sending a genuine StoreKit 2 signed transaction."
        XCTAssertEqual(try rejected.json()["suggestion"]?.stringValue, exactSuggestion)
        let rejectedDetail = try rejected.json()["details"]?[0]
        XCTAssertEqual(rejectedDetail?["step"]?.stringValue, "chain", rejected.description)
        XCTAssertEqual(rejectedDetail?["path"], ["signed_transaction_info"], rejected.description)

        // Unsupported algorithm.
        let hs256 = try api.postReceipt(tenant.publicKey, try E2E.mint(good.json, alg: "HS256"), user: "u")
        assertError(hs256, 400, "JWS_UNSUPPORTED_ALGORITHM")
        assertStep(hs256, "header")

        // Not base64url at all: the format step.
        let garbage = try api.postReceipt(tenant.publicKey, "###.b.c", user: "u")
        assertError(garbage, 400, "INVALID_JWS_FORMAT")
        assertStep(garbage, "format")

        // Another app's transaction.
        var foreign = good
        foreign.bundleId = "com.someone.else"
        let foreignResponse = try api.postReceipt(tenant.publicKey, try foreign.mint(), user: "u")
        assertError(foreignResponse, 400, "BUNDLE_ID_MISMATCH")
        assertStep(foreignResponse, "claims")

        // Production on a Sandbox-only project.
        var production = good
        production.environment = "Production"
        assertError(try api.postReceipt(tenant.publicKey, try production.mint(), user: "u"), 400, "ENVIRONMENT_NOT_ALLOWED")

        for table in ["transactions", "purchases", "subscriptions", "ownership_events"] {
            XCTAssertEqual(try db.count(table, project: tenant.id), 0, table)
        }
        // The good one still goes through afterwards.
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, jws, user: "u").status, 201)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 1)
    }

    func testAuthErrors() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        let jws = try TransactionPayload(bundleId: tenant.bundleId).mint()
        let receiptSuggestion = "Use a valid public key (pk_...) in the URL path: POST /v1/receipts/:public_key."
        // Malformed, and well-formed but unknown (answers exactly alike).
        let unknown = "pk_" + String(repeating: "0", count: 32)
        for key in ["nope", "pk_123", unknown, tenant.secretKey] {
            let r = try api.postReceipt(key, jws, user: "u")
            XCTAssertEqual(r.status, 401, key)
            XCTAssertEqual(try r.errorFields(), [
                "error": "Invalid public key.", "code": "AUTH_INVALID_PUBLIC_KEY", "suggestion": .string(receiptSuggestion),
            ], key)
            assertError(try api.user(key, "u"), 401, "AUTH_INVALID_PUBLIC_KEY", error: "Invalid public key.",
                        suggestion: "Use a valid public key (pk_...) in the URL path.")
        }
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 0)

        // Admin token: missing, wrong, wrong scheme.
        for headers in [[:], ["Authorization": "Bearer wrong-token-0123456789"], ["Authorization": "Basic \(E2E.adminToken)"],
                        ["Authorization": "Bearer \(tenant.secretKey)"]] {
            let r = try api.client.get("/v1/admin/projects", headers: headers)
            assertError(r, 401, "AUTH_INVALID_ADMIN_TOKEN", error: "Invalid admin token.")
            let create = try api.client.post("/v1/admin/projects", json: ["name": "x", "bundle_id": "com.x"], headers: headers)
            assertError(create, 401, "AUTH_INVALID_ADMIN_TOKEN")
        }
        XCTAssertEqual(try db.query("SELECT 1 FROM projects WHERE bundle_id = 'com.x'").count, 0)
    }

    // MARK: 10. Secret key reads

    func testSecretKeyRequiredForReads() throws {
        let api = try api
        let tenant = try api.createProject(extra: [("require_secret_key_for_reads", true)])
        XCTAssertEqual(tenant.created["require_secret_key_for_reads"], true)
        try api.mapProduct(tenant)
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        // Posting receipts still needs only the public key.
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try payload.mint(), user: "reader").status, 201)

        assertError(try api.user(tenant.publicKey, "reader"), 401, "AUTH_SECRET_KEY_REQUIRED", error: "Secret key required.")
        let ok = try api.user(tenant.publicKey, "reader", headers: ["Authorization": "Bearer \(tenant.secretKey)"])
        XCTAssertEqual(ok.status, 200, ok.description)
        XCTAssertEqual(try ok.json()["entitlements"], ["pro"])
        let wrong = "sk_" + String(repeating: "a", count: 64)
        for header in ["Bearer \(wrong)", "Bearer nonsense", "Bearer \(tenant.publicKey)", tenant.secretKey] {
            assertError(try api.user(tenant.publicKey, "reader", headers: ["Authorization": header]),
                        401, "AUTH_INVALID_SECRET_KEY", error: "Invalid secret key.")
        }
        // Another project's secret key does not open this one.
        let other = try api.createProject()
        assertError(try api.user(tenant.publicKey, "reader", headers: ["Authorization": "Bearer \(other.secretKey)"]),
                    401, "AUTH_INVALID_SECRET_KEY")
    }

    // MARK: 4. Idempotency

    func testSameJWSTwiceIsOneRow() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let jws = try TransactionPayload(bundleId: tenant.bundleId).mint()
        let first = try api.postReceipt(tenant.publicKey, jws, user: "twice")
        let second = try api.postReceipt(tenant.publicKey, jws, user: "twice")
        XCTAssertEqual(first.status, 201, first.description)
        XCTAssertEqual(second.status, 201, second.description)
        XCTAssertEqual(first.body, second.body)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 1)
        XCTAssertEqual(try db.count("purchases", project: tenant.id), 1)
        XCTAssertEqual(try db.count("subscriptions", project: tenant.id), 1)
        XCTAssertEqual(try db.count("ownership_events", project: tenant.id), 0)
        // Without a user: still the same answer and no subscription for anyone new.
        let anonymous = try api.postReceipt(tenant.publicKey, jws)
        XCTAssertEqual(anonymous.body, first.body)
        XCTAssertEqual(try db.count("subscriptions", project: tenant.id), 1)
    }

    func testConcurrentPostsFromEightThreadsAndTwoProcesses() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let second = try BouncerProcess(databaseURL: db.url)
        let clients = [try server.client, second.client]

        for round in 0..<2 {
            // Round 0: 8 threads on one server; round 1: 8 threads split across both processes.
            let payload = TransactionPayload(bundleId: tenant.bundleId)
            let jws = try payload.mint()
            let results = Mutex<[Int: Result<HTTPResponse, any Error>]>([:])
            DispatchQueue.concurrentPerform(iterations: 8) { i in
                let client = clients[round == 0 ? 0 : i % 2]
                let r = Result { try client.post("/v1/receipts/\(tenant.publicKey)",
                                                 json: E2E.receiptBody(jws, user: "racer")) }
                results.withLock { $0[i] = r }
            }
            let responses = try results.withLock { $0 }.sorted { $0.key < $1.key }.map { try $0.value.get() }
            XCTAssertEqual(responses.count, 8)
            for r in responses {
                XCTAssertEqual(r.status, 201, "round \(round): \(r)")
                XCTAssertEqual(r.body, responses.first?.body, "round \(round)")
            }
            XCTAssertEqual(try responses.first?.json(), expectedReceipt(payload, entitlements: ["pro"], status: "active"))
            let rows = try db.query("SELECT count(*)::int8 AS n FROM transactions WHERE project_id = \(tenant.id)::uuid AND transaction_id = \(payload.transactionId)")
            XCTAssertEqual(try rows.first?.decode("n", as: Int64.self), 1, "round \(round)")
            let subs = try db.query("SELECT count(*)::int8 AS n FROM subscriptions WHERE project_id = \(tenant.id)::uuid AND original_transaction_id = \(payload.originalTransactionId)")
            XCTAssertEqual(try subs.first?.decode("n", as: Int64.self), 1, "round \(round)")
        }
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 2)
        let user = try api.user(tenant.publicKey, "racer").json()
        XCTAssertEqual(user["subscriptions"]?.arrayValue?.count, 2)
        second.stopAndAssertCleanExit()
    }

    // MARK: 5. Out of order

    func testOlderRenewalAfterNewerKeepsTheNewerPeriod() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let original = E2E.uniqueId()
        var renewal1 = TransactionPayload(bundleId: tenant.bundleId, originalTransactionId: original)
        renewal1.originalPurchaseDate = E2E.ms(-70 * 86_400)
        renewal1.purchaseDate = E2E.ms(-40 * 86_400)
        renewal1.expiresDate = E2E.ms(-10 * 86_400)
        renewal1.signedDate = E2E.ms(-40 * 86_400)
        var renewal2 = renewal1
        renewal2.transactionId = E2E.uniqueId()
        renewal2.purchaseDate = E2E.ms(-10 * 86_400)
        renewal2.expiresDate = E2E.ms(20 * 86_400)
        renewal2.signedDate = E2E.ms(-10 * 86_400)

        let newer = try api.postReceipt(tenant.publicKey, try renewal2.mint(), user: "ooo")
        XCTAssertEqual(newer.status, 201, newer.description)
        XCTAssertEqual(try newer.json(), expectedReceipt(renewal2, entitlements: ["pro"], status: "active"))
        let older = try api.postReceipt(tenant.publicKey, try renewal1.mint(), user: "ooo")
        XCTAssertEqual(older.status, 201, older.description)
        // The older renewal's own answer is its own period (ended); the subscription keeps renewal 2's.
        XCTAssertEqual(try older.json()["transaction_id"], .string(renewal1.transactionId))
        XCTAssertEqual(try older.json()["expires_date"], .string(E2E.iso(renewal1.expiresDate ?? 0)))

        let user = try api.user(tenant.publicKey, "ooo").json()
        XCTAssertEqual(user["status"], "active")
        XCTAssertEqual(user["entitlements"], ["pro"])
        XCTAssertEqual(user["subscriptions"]?.arrayValue?.count, 1)
        XCTAssertEqual(user["subscriptions"]?[0]?["current_period_end"], .string(E2E.iso(renewal2.expiresDate ?? 0)))
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 2)
        XCTAssertEqual(try db.count("subscriptions", project: tenant.id), 1)
        let purchase = try db.query("SELECT latest_transaction_id FROM purchases WHERE project_id = \(tenant.id)::uuid")
        XCTAssertEqual(try purchase.first?.decode("latest_transaction_id", as: String.self), renewal2.transactionId)
    }

    // MARK: 6. Transfer policies

    func testTransferPolicyMovesThePurchase() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()  // default policy: transfer
        XCTAssertEqual(tenant.created["transfer_policy"], "transfer")
        try api.mapProduct(tenant)
        let jws = try TransactionPayload(bundleId: tenant.bundleId).mint()
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, jws, user: "alice").status, 201)
        XCTAssertEqual(try db.count("ownership_events", project: tenant.id), 0)
        let restore = try api.postReceipt(tenant.publicKey, jws, user: "bob")
        XCTAssertEqual(restore.status, 201, restore.description)
        XCTAssertEqual(try restore.json()["entitlements"], ["pro"])

        let bob = try api.user(tenant.publicKey, "bob").json()
        XCTAssertEqual(bob["status"], "active")
        XCTAssertEqual(bob["entitlements"], ["pro"])
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json(),
                       ["user_id": "alice", "status": "none", "entitlements": [], "subscriptions": []])
        let events = try db.query("SELECT from_user_id, to_user_id, policy FROM ownership_events WHERE project_id = \(tenant.id)::uuid")
        XCTAssertEqual(events.count, 1)
        XCTAssertEqual(try events.first?.decode("from_user_id", as: String?.self), "alice")
        XCTAssertEqual(try events.first?.decode("to_user_id", as: String?.self), "bob")
        XCTAssertEqual(try events.first?.decode("policy", as: String.self), "transfer")
        // Posting again for bob changes nothing more.
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, jws, user: "bob").status, 201)
        XCTAssertEqual(try db.count("ownership_events", project: tenant.id), 1)
    }

    func testSharePolicyKeepsBothOwners() throws {
        let api = try api
        let tenant = try api.createProject(extra: [("transfer_policy", "share")])
        try api.mapProduct(tenant)
        let jws = try TransactionPayload(bundleId: tenant.bundleId).mint()
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, jws, user: "alice").status, 201)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, jws, user: "bob").status, 201)
        for user in ["alice", "bob"] {
            let body = try api.user(tenant.publicKey, user).json()
            XCTAssertEqual(body["status"], "active", user)
            XCTAssertEqual(body["entitlements"], ["pro"], user)
        }
        XCTAssertEqual(try db.count("subscriptions", project: tenant.id), 2)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 1)
    }

    func testBlockPolicyRefusesTheSecondUser() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject(extra: [("transfer_policy", "block")])
        try api.mapProduct(tenant)
        let first = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try first.mint(), user: "alice").status, 201)
        let before = try db.query("SELECT user_id, revoked_at::text AS r FROM subscriptions WHERE project_id = \(tenant.id)::uuid")

        var renewal = first
        renewal.transactionId = E2E.uniqueId()
        renewal.expiresDate = E2E.ms(60 * 86_400)
        for jws in [try first.mint(), try renewal.mint()] {
            let r = try api.postReceipt(tenant.publicKey, jws, user: "mallory")
            XCTAssertEqual(r.status, 409, r.description)
            XCTAssertEqual(try r.json()["code"], "PURCHASE_OWNED_BY_ANOTHER_USER")
        }
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json()["entitlements"], ["pro"])
        XCTAssertEqual(try api.user(tenant.publicKey, "mallory").json(),
                       ["user_id": "mallory", "status": "none", "entitlements": [], "subscriptions": []])
        let after = try db.query("SELECT user_id, revoked_at::text AS r FROM subscriptions WHERE project_id = \(tenant.id)::uuid")
        XCTAssertEqual(after.count, 1)
        XCTAssertEqual(try after.first?.decode("user_id", as: String.self), try before.first?.decode("user_id", as: String.self))
        XCTAssertNil(try after.first?.decode("r", as: String?.self))
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 1, "a refused post stores nothing")
        let alice = try api.user(tenant.publicKey, "alice").json()
        XCTAssertEqual(alice["subscriptions"]?[0]?["current_period_end"], .string(E2E.iso(first.expiresDate ?? 0)))
    }

    // MARK: 7. Tenant isolation

    func testProjectsNeverSeeEachOthersRows() throws {
        let api = try api
        let db = try db
        let a = try api.createProject()
        let b = try api.createProject()
        try api.mapProduct(a)
        try api.mapProduct(b)
        let payloadA = TransactionPayload(bundleId: a.bundleId)
        let jwsA = try payloadA.mint()
        XCTAssertEqual(try api.postReceipt(a.publicKey, jwsA, user: "shared-user").status, 201)

        // B's key cannot read A's user.
        XCTAssertEqual(try api.user(b.publicKey, "shared-user").json(),
                       ["user_id": "shared-user", "status": "none", "entitlements": [], "subscriptions": []])
        assertError(try api.user(b.publicKey, "shared-user", headers: ["Authorization": "Bearer \(a.secretKey)"]),
                    401, "AUTH_INVALID_SECRET_KEY")
        // A's JWS with B's key: rejected before anything is stored.
        assertError(try api.postReceipt(b.publicKey, jwsA, user: "shared-user"), 400, "BUNDLE_ID_MISMATCH")
        for table in ["transactions", "purchases", "subscriptions"] {
            XCTAssertEqual(try db.count(table, project: b.id), 0, table)
        }
        // The same transaction id in both projects: two rows, one per project.
        var payloadB = TransactionPayload(bundleId: b.bundleId)
        payloadB.transactionId = payloadA.transactionId
        payloadB.originalTransactionId = payloadA.originalTransactionId
        XCTAssertEqual(try api.postReceipt(b.publicKey, try payloadB.mint(), user: "shared-user").status, 201)
        let rows = try db.query("SELECT project_id::text AS p FROM transactions WHERE transaction_id = \(payloadA.transactionId) ORDER BY 1")
        XCTAssertEqual(try rows.map { try $0.decode("p", as: String.self) }, [a.id, b.id].sorted())
        // Deleting B leaves A intact.
        XCTAssertEqual(try api.client.delete("/v1/admin/projects/\(b.id)", headers: E2E.admin).status, 204)
        XCTAssertEqual(try api.user(a.publicKey, "shared-user").json()["entitlements"], ["pro"])
        XCTAssertEqual(try db.count("transactions", project: a.id), 1)
    }

    // MARK: 8. Expiry at read time

    func testSubscriptionExpiresAtReadTimeWithoutNewInput() throws {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.expiresDate = E2E.ms(3)
        let r = try api.postReceipt(tenant.publicKey, try payload.mint(), user: "soon")
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json(), expectedReceipt(payload, entitlements: ["pro"], status: "active"))
        let active = try api.user(tenant.publicKey, "soon").json()
        XCTAssertEqual(active["status"], "active")
        XCTAssertEqual(active["entitlements"], ["pro"])

        let expiry = Date(timeIntervalSince1970: Double(payload.expiresDate ?? 0) / 1000)
        Thread.sleep(forTimeInterval: max(0, expiry.timeIntervalSinceNow) + 0.5)
        let expired = try api.user(tenant.publicKey, "soon").json()
        XCTAssertEqual(expired["status"], "expired")
        XCTAssertEqual(expired["entitlements"], [])
        XCTAssertEqual(expired["subscriptions"]?[0]?["status"], "expired")
        XCTAssertEqual(expired["subscriptions"]?[0]?["current_period_end"], .string(E2E.iso(payload.expiresDate ?? 0)))
    }

    // MARK: 11. CLI against the same database

    func testCLIProvisionedProjectAcceptsReceipts() throws {
        let api = try api
        let db = try db
        let server = try server
        let bundle = E2E.uniqueBundle()
        var env = server.environment
        env["BOUNCER_PORT"] = nil
        let create = try CLIRun.run(["project", "create", "--name", "CLI app", "--bundle-id", bundle, "--environment", "Sandbox"],
                                    environment: env)
        XCTAssertEqual(create.status, 0, create.stderr)
        let project = try JSONParser.parse(create.stdout)
        let id = try XCTUnwrap(project["id"]?.stringValue, create.stdout)
        let publicKey = try XCTUnwrap(project["public_key"]?.stringValue)
        XCTAssertTrue(project["secret_key"]?.stringValue?.hasPrefix("sk_") == true, create.stdout)
        XCTAssertEqual(project["environments"], ["Sandbox"])
        XCTAssertEqual(project["bundle_id"], .string(bundle))

        let product = try CLIRun.run(["product", "set", id, "com.e2e.pro.monthly", "pro", "extra"], environment: env)
        XCTAssertEqual(product.status, 0, product.stderr)
        XCTAssertEqual(try JSONParser.parse(product.stdout), ["product_id": "com.e2e.pro.monthly", "entitlements": ["extra", "pro"]])

        // The admin API sees the same project.
        let shown = try api.client.get("/v1/admin/projects/\(id)", headers: E2E.admin)
        XCTAssertEqual(shown.status, 200, shown.description)
        XCTAssertEqual(try shown.json()["public_key"], .string(publicKey))

        let payload = TransactionPayload(bundleId: bundle)
        let r = try api.postReceipt(publicKey, try payload.mint(), user: "cli-user")
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json(), expectedReceipt(payload, entitlements: ["extra", "pro"], status: "active"))
        XCTAssertEqual(try db.count("transactions", project: id), 1)
    }

    static func isKey(_ key: String, prefix: String, hexDigits: Int) -> Bool {
        key.hasPrefix(prefix) && key.utf8.count == prefix.utf8.count + hexDigits
            && key.utf8.dropFirst(prefix.utf8.count).allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }
}

/// Verification failures name the failing step in `details`, in the shape of validation details.
func assertStep(_ r: HTTPResponse, _ step: String, file: StaticString = #filePath, line: UInt = #line) {
    guard let json = try? r.json(), let detail = json["details"]?[0] else {
        return XCTFail("no details: \(r)", file: file, line: line)
    }
    XCTAssertEqual(json["details"]?.arrayValue?.count, 1, r.description, file: file, line: line)
    XCTAssertEqual(detail["step"]?.stringValue, step, r.description, file: file, line: line)
    XCTAssertEqual(detail["path"], ["signed_transaction_info"], r.description, file: file, line: line)
    XCTAssertNotNil(detail["message"]?.stringValue, r.description, file: file, line: line)
}
