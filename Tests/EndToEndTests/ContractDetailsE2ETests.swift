import JSON
import XCTest

/// Finer points of the contract on the same shared server: admin validation, the user summary rules, receipts for
/// purchases that already ended, and products nobody mapped.
extension ContractE2ETests {
    func testAdminValidationAndNotFound() throws {
        let api = try api
        let db = try db
        let projectsBefore = try db.count("projects")

        let missing = try api.client.post("/v1/admin/projects", json: ["name": "x"], headers: E2E.admin)
        assertError(missing, 400, "VALIDATION_ERROR", error: "Validation error")
        XCTAssertEqual(try missing.json()["details"], [["path": ["bundle_id"], "message": "Required"]])

        let wrong = try api.client.post("/v1/admin/projects", json: [
            "name": "x", "bundle_id": "com.x", "transfer_policy": "steal", "environments": ["Staging"],
            "allow_xcode": "yes", "app_apple_id": 0,
        ], headers: E2E.admin)
        assertError(wrong, 400, "VALIDATION_ERROR")
        let paths = try XCTUnwrap(wrong.json()["details"]?.arrayValue).compactMap { $0["path"] }
        XCTAssertEqual(Set(paths.map(\.description)), Set([
            #"["transfer_policy"]"#, #"["environments","0"]"#, #"["allow_xcode"]"#, #"["app_apple_id"]"#,
        ]), wrong.description)
        XCTAssertEqual(try db.count("projects"), projectsBefore, "a rejected create stores nothing")

        let tenant = try api.createProject(extra: [("app_apple_id", 1234567890), ("environments", ["Sandbox"]),
                                                   ("allow_xcode", true)])
        XCTAssertEqual(tenant.created["app_apple_id"], 1234567890)
        XCTAssertEqual(tenant.created["environments"], ["Sandbox"])
        XCTAssertEqual(tenant.created["allow_xcode"], true)
        let cleared = try api.client.send("PATCH", "/v1/admin/projects/\(tenant.id)", json: ["app_apple_id": nil], headers: E2E.admin)
        XCTAssertEqual(cleared.status, 200, cleared.description)
        XCTAssertEqual(try cleared.json()["app_apple_id"], .null)
        assertError(try api.client.send("PATCH", "/v1/admin/projects/\(tenant.id)", json: [:], headers: E2E.admin),
                    400, "VALIDATION_ERROR")

        let product = try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/products/p1",
                                          json: ["entitlements": ["ok", ""]], headers: E2E.admin)
        assertError(product, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try product.json()["details"]?[0]?["path"], ["entitlements", "1"])
        assertError(try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/products/p1", json: [:], headers: E2E.admin),
                    400, "VALIDATION_ERROR")
        XCTAssertEqual(try db.count("products", project: tenant.id), 0)

        let unknown = "00000000-0000-4000-8000-000000000000"
        assertError(try api.client.get("/v1/admin/projects/\(unknown)", headers: E2E.admin), 404, "PROJECT_NOT_FOUND")
        assertError(try api.client.delete("/v1/admin/projects/\(unknown)", headers: E2E.admin), 404, "PROJECT_NOT_FOUND")
        assertError(try api.client.request("POST", "/v1/admin/projects/\(unknown)/rotate-keys", headers: E2E.admin),
                    404, "PROJECT_NOT_FOUND")
        assertError(try api.client.send("PUT", "/v1/admin/projects/\(unknown)/products/p1", json: ["entitlements": ["a"]],
                                        headers: E2E.admin), 404, "PROJECT_NOT_FOUND")
        assertError(try api.client.get("/v1/admin/projects/\(unknown)/products", headers: E2E.admin), 404, "PROJECT_NOT_FOUND")
        assertError(try api.client.get("/v1/admin/projects/not-a-uuid", headers: E2E.admin), 400, "VALIDATION_ERROR")

        // Re-mapping replaces the entitlements.
        try api.mapProduct(tenant, "p1", ["a"])
        let replaced = try api.mapProduct(tenant, "p1", ["b"])
        XCTAssertEqual(try replaced.json(), ["product_id": "p1", "entitlements": ["b"]])
        XCTAssertEqual(try db.count("products", project: tenant.id), 1)
    }

    /// Entitlements are the sorted, deduplicated union over active subscriptions; an unmapped product grants nothing.
    func testUserSummaryUnionAndUnmappedProducts() throws {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant, "com.e2e.a", ["pro", "zeta"])
        try api.mapProduct(tenant, "com.e2e.b", ["alpha", "pro"])
        for product in ["com.e2e.a", "com.e2e.b", "com.e2e.unmapped"] {
            var payload = TransactionPayload(bundleId: tenant.bundleId)
            payload.productId = product
            let r = try api.postReceipt(tenant.publicKey, try payload.mint(), user: "many")
            XCTAssertEqual(r.status, 201, r.description)
            if product == "com.e2e.unmapped" {
                XCTAssertEqual(try r.json(), expectedReceipt(payload, entitlements: [], status: "active"))
            }
        }
        let body = try api.user(tenant.publicKey, "many").json()
        XCTAssertEqual(body["status"], "active")
        XCTAssertEqual(body["entitlements"], ["alpha", "pro", "zeta"])
        XCTAssertEqual(body["subscriptions"]?.arrayValue?.count, 3)
        for subscription in body["subscriptions"]?.arrayValue ?? [] {
            XCTAssertEqual(subscription["status"], "active")
            XCTAssertEqual(subscription["auto_renew_enabled"], true)
        }
    }

    /// A purchase that already ended answers 201 `expired` with no entitlements; with nothing active, the user's
    /// status is that of the most recently ended purchase.
    func testEndedPurchasesAndMostRecentlyEndedStatus() throws {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        var old = TransactionPayload(bundleId: tenant.bundleId)
        old.purchaseDate = E2E.ms(-40 * 86_400)
        old.originalPurchaseDate = old.purchaseDate
        old.expiresDate = E2E.ms(-10 * 86_400)
        let r = try api.postReceipt(tenant.publicKey, try old.mint(), user: "ended")
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json(), expectedReceipt(old, entitlements: [], status: "expired"))
        let expired = try api.user(tenant.publicKey, "ended").json()
        XCTAssertEqual(expired["status"], "expired")
        XCTAssertEqual(expired["entitlements"], [])
        XCTAssertEqual(expired["subscriptions"]?[0]?["current_period_end"], .string(E2E.iso(old.expiresDate ?? 0)))

        // Revoked yesterday: ended after the expired one, so the user's status is revoked.
        var refunded = TransactionPayload(bundleId: tenant.bundleId)
        refunded.purchaseDate = E2E.ms(-5 * 86_400)
        refunded.originalPurchaseDate = refunded.purchaseDate
        refunded.revocationDate = E2E.ms(-86_400)
        refunded.revocationReason = 1
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try refunded.mint(), user: "ended").status, 201)
        let revoked = try api.user(tenant.publicKey, "ended").json()
        XCTAssertEqual(revoked["status"], "revoked", revoked.description)
        XCTAssertEqual(revoked["entitlements"], [])
        XCTAssertEqual(revoked["subscriptions"]?.arrayValue?.count, 2)

        // A new active purchase makes the user active again.
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try TransactionPayload(bundleId: tenant.bundleId).mint(),
                                           user: "ended").status, 201)
        XCTAssertEqual(try api.user(tenant.publicKey, "ended").json()["status"], "active")
    }

    /// Flipping `require_secret_key_for_reads` with PATCH takes effect on the next read.
    func testPatchRequireSecretKeyTakesEffect() throws {
        let api = try api
        let tenant = try api.createProject()
        XCTAssertEqual(try api.user(tenant.publicKey, "u").status, 200)
        let patch = try api.client.send("PATCH", "/v1/admin/projects/\(tenant.id)",
                                        json: ["require_secret_key_for_reads": true], headers: E2E.admin)
        XCTAssertEqual(patch.status, 200, patch.description)
        assertError(try api.user(tenant.publicKey, "u"), 401, "AUTH_SECRET_KEY_REQUIRED")
        XCTAssertEqual(try api.user(tenant.publicKey, "u", headers: ["Authorization": "Bearer \(tenant.secretKey)"]).status, 200)
    }
}
