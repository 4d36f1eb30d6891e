import Domain
import Foundation
import HTTPCore
import JSON
import XCTest

final class AdminTests: XCTestCase {
    let createBody = #"{"name":"My App","bundle_id":"com.example.new"}"#

    func testCreateWithDefaultsShowsTheSecretOnce() throws {
        let h = Harness()
        let response = h.admin(.post, "/v1/admin/projects", body: createBody)
        XCTAssertEqual(response.status, 201, response.text)
        let json = try XCTUnwrap(response.json)
        XCTAssertEqual(json["id"]?.stringValue, "00000000-0000-0000-0000-000000000001")
        XCTAssertEqual(json["name"]?.stringValue, "My App")
        XCTAssertEqual(json["bundle_id"]?.stringValue, "com.example.new")
        XCTAssertEqual(json["app_apple_id"], .null)
        XCTAssertEqual(json["environments"], ["Production", "Sandbox"])
        XCTAssertEqual(json["transfer_policy"]?.stringValue, "transfer")
        XCTAssertEqual(json["allow_xcode"], false)
        XCTAssertEqual(json["require_secret_key_for_reads"], false)
        XCTAssertEqual(json["created_at"]?.stringValue, "2026-06-01T00:00:00.000Z")
        XCTAssertEqual(json["updated_at"]?.stringValue, "2026-06-01T00:00:00.000Z")
        let publicKey = try XCTUnwrap(json["public_key"]?.stringValue)
        let secretKey = try XCTUnwrap(json["secret_key"]?.stringValue)
        XCTAssertTrue(ProjectKeys.isPublicKeySyntax(publicKey))
        XCTAssertTrue(ProjectKeys.isSecretKeySyntax(secretKey))
        XCTAssertEqual(json.objectValue?.keys, ["id", "account_id", "name", "bundle_id", "app_apple_id", "environments",
                                                 "transfer_policy", "allow_xcode", "require_secret_key_for_reads",
                                                 "app_account_token_policy", "consumption_response",
                                                 "consumption_customer_consented",
                                                 "consumption_sample_content_provided",
                                                 "consumption_refund_preference", "app_purchase_entitlements",
                                                 "entitlement_tokens", "entitlement_token_ttl_seconds",
                                                 "sandbox_access", "sandbox_allowed_user_ids",
                                                 "finish_transactions", "public_key", "public_keys",
                                                 "secret_keys", "created_at", "updated_at", "secret_key"])
        XCTAssertEqual(json["app_account_token_policy"]?.stringValue, "ignore")
        XCTAssertEqual(json["public_keys"], [["key": .string(publicKey), "created_at": "2026-06-01T00:00:00.000Z",
                                              "expires_at": .null]])
        XCTAssertEqual(json["secret_keys"], [["last4": .string(String(secretKey.suffix(4))),
                                              "created_at": "2026-06-01T00:00:00.000Z", "expires_at": .null]])
        // Stored hashed; shown only once.
        let id = FakeProjectStore.uuid(1)
        XCTAssertEqual(try h.projects.liveSecretKeyHashes(projectId: id, at: Harness.now), [FakeHasher().hash(secretKey)])
        let shown = h.admin(.get, "/v1/admin/projects/\(id.uuidString.lowercased())")
        XCTAssertEqual(shown.status, 200)
        XCTAssertNil(shown.json?["secret_key"])
        XCTAssertEqual(shown.json?["public_key"]?.stringValue, publicKey)
        // The new keys work at once.
        let read = h.send(.get, "/v1/subscriptions/\(publicKey)/u", headers: [("Authorization", "Bearer " + secretKey)])
        XCTAssertEqual(read.status, 200)
    }

    func testCreateWithEverySetting() {
        let h = Harness()
        let response = h.admin(.post, "/v1/admin/projects", body: #"{"name":"A","bundle_id":"b","app_apple_id":1234,"#
            + #""environments":["Sandbox","Sandbox"],"transfer_policy":"block","allow_xcode":true,"#
            + #""require_secret_key_for_reads":true,"app_account_token_policy":"require_match"}"#)
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(response.json?["app_account_token_policy"]?.stringValue, "require_match")
        XCTAssertEqual(response.json?["app_apple_id"], 1234)
        XCTAssertEqual(response.json?["environments"], ["Sandbox"])
        XCTAssertEqual(response.json?["transfer_policy"]?.stringValue, "block")
        XCTAssertEqual(response.json?["allow_xcode"], true)
        XCTAssertEqual(response.json?["require_secret_key_for_reads"], true)
    }

    func testCreateValidationReportsEveryField() {
        let h = Harness()
        let response = h.admin(.post, "/v1/admin/projects", body: #"{"name":"","app_apple_id":0,"environments":[],"#
            + #""transfer_policy":"steal","allow_xcode":"yes","app_account_token_policy":"trust"}"#)
        // JSON shape problems first, then the use case's rules (ProjectRules) on the fields that parsed.
        assertError(response, status: 400, code: "VALIDATION_ERROR", error: "Validation error", details: [
            ["path": ["bundle_id"], "message": "Required"],
            ["path": ["app_apple_id"], "message": "Number must be greater than or equal to 1"],
            ["path": ["transfer_policy"], "message": "Invalid enum value. Expected 'transfer' | 'share' | 'block'"],
            ["path": ["allow_xcode"], "message": "Expected boolean"],
            ["path": ["app_account_token_policy"],
             "message": "Invalid enum value. Expected 'ignore' | 'require_match' | 'prefer'"],
            ["path": ["name"], "message": "String must contain at least 1 character(s)"],
            ["path": ["environments"], "message": "Array must contain at least 1 element(s)"],
        ])
        let bad = h.admin(.post, "/v1/admin/projects", body: #"{"name":"A","bundle_id":"b","app_apple_id":1.5,"#
            + #""environments":["Production","Xcode",3]}"#)
        assertError(bad, status: 400, code: "VALIDATION_ERROR", details: [
            ["path": ["app_apple_id"], "message": "Expected integer"],
            ["path": ["environments", "1"], "message": "Invalid enum value. Expected 'Production' | 'Sandbox'"],
            ["path": ["environments", "2"], "message": "Expected string"],
        ])
        XCTAssertEqual(try h.projects.allProjects().count, 1, "nothing created")
    }

    func testListShowsProjectsOldestFirstWithoutSecrets() {
        let h = Harness()
        XCTAssertEqual(h.admin(.post, "/v1/admin/projects", body: createBody).status, 201)
        let response = h.admin(.get, "/v1/admin/projects")
        XCTAssertEqual(response.status, 200)
        let list = response.json?["projects"]?.arrayValue ?? []
        XCTAssertEqual(list.compactMap { $0["name"]?.stringValue }, ["My App", "My App"])
        XCTAssertEqual(list.first?["public_key"]?.stringValue, Harness.publicKey)
        XCTAssertFalse(response.text.contains(#""secret_key":"#))
        XCTAssertFalse(response.text.contains(#""sk_"#))
    }

    func testShowExactBody() {
        let h = Harness()
        let response = h.admin(.get, "/v1/admin/projects/00000000-0000-0000-0000-000000000900")
        XCTAssertEqual(response.text, #"{"id":"00000000-0000-0000-0000-000000000900","#
            + #""account_id":"00000000-0000-4000-8000-000000000001","name":"My App","#
            + #""bundle_id":"com.example.app","app_apple_id":null,"environments":["Production","Sandbox"],"#
            + #""transfer_policy":"transfer","allow_xcode":false,"require_secret_key_for_reads":false,"#
            + #""app_account_token_policy":"ignore","#
            + #""consumption_response":"off","consumption_customer_consented":false,"#
            + #""consumption_sample_content_provided":false,"consumption_refund_preference":null,"#
            + #""app_purchase_entitlements":null,"#
            + #""entitlement_tokens":false,"entitlement_token_ttl_seconds":300,"#
            + #""sandbox_access":"all","sandbox_allowed_user_ids":[],"finish_transactions":false,"#
            + #""public_key":"pk_0123456789abcdef0123456789abcdef","#
            + #""public_keys":[{"key":"pk_0123456789abcdef0123456789abcdef","created_at":"2026-06-01T00:00:00.000Z","#
            + #""expires_at":null}],"secret_keys":[{"last4":"abab","created_at":"2026-06-01T00:00:00.000Z","#
            + #""expires_at":null}],"created_at":"2026-06-01T00:00:00.000Z","#
            + #""updated_at":"2026-06-01T00:00:00.000Z"}"#)
    }

    func testPatchIsPartialAndNullClearsAppAppleId() {
        let h = Harness()
        let path = "/v1/admin/projects/00000000-0000-0000-0000-000000000900"
        let set = h.admin(.patch, path, body: #"{"app_apple_id":42,"transfer_policy":"share","unknown":1}"#)
        XCTAssertEqual(set.status, 200, set.text)
        XCTAssertEqual(set.json?["app_apple_id"], 42)
        XCTAssertEqual(set.json?["transfer_policy"]?.stringValue, "share")
        XCTAssertEqual(set.json?["name"]?.stringValue, "My App")
        let cleared = h.admin(.patch, path, body: #"{"app_apple_id":null}"#)
        XCTAssertEqual(cleared.json?["app_apple_id"], .null)
        XCTAssertEqual(cleared.json?["transfer_policy"]?.stringValue, "share")
        assertError(h.admin(.patch, path, body: "{}"), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": [], "message": "At least one field is required"]])
        assertError(h.admin(.patch, path, body: #"{"name":7}"#), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["name"], "message": "Expected string"]])
        assertError(h.admin(.patch, "/v1/admin/projects/00000000-0000-0000-0000-000000000999", body: #"{"name":"x"}"#),
                    status: 404, code: "PROJECT_NOT_FOUND", error: "Project not found.")
    }

    func testDeleteProject() {
        let h = Harness()
        let path = "/v1/admin/projects/00000000-0000-0000-0000-000000000900"
        let response = h.admin(.delete, path)
        XCTAssertEqual(response.status, 204)
        XCTAssertEqual(response.body, [])
        assertError(h.admin(.delete, path), status: 404, code: "PROJECT_NOT_FOUND")
        assertError(h.admin(.get, path), status: 404, code: "PROJECT_NOT_FOUND")
        assertError(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u"), status: 401, code: "AUTH_INVALID_PUBLIC_KEY")
    }

    func testRotateKeysWithoutBodyRotatesBothWithDefaultGraces() throws {
        let h = Harness()
        let response = h.admin(.post, "/v1/admin/projects/00000000-0000-0000-0000-000000000900/rotate-keys")
        XCTAssertEqual(response.status, 200, response.text)
        let publicKey = try XCTUnwrap(response.json?["public_key"]?.stringValue)
        let secretKey = try XCTUnwrap(response.json?["secret_key"]?.stringValue)
        XCTAssertNotEqual(publicKey, Harness.publicKey)
        // Current key first, then the retiring one with its expiry: 30 days for public, 24 h for secret.
        XCTAssertEqual(response.json?["public_keys"], [
            ["key": .string(publicKey), "created_at": "2026-06-01T00:00:00.000Z", "expires_at": .null],
            ["key": .string(Harness.publicKey), "created_at": "2026-06-01T00:00:00.000Z",
             "expires_at": "2026-07-01T00:00:00.000Z"],
        ])
        XCTAssertEqual(response.json?["secret_keys"], [
            ["last4": .string(String(secretKey.suffix(4))), "created_at": "2026-06-01T00:00:00.000Z", "expires_at": .null],
            ["last4": "abab", "created_at": "2026-06-01T00:00:00.000Z", "expires_at": "2026-06-02T00:00:00.000Z"],
        ])
        // Both old keys still work during their grace, with the new ones.
        for key in [Harness.publicKey, publicKey] {
            for secret in [Harness.secretKey, secretKey] {
                XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(key)/u",
                                      headers: [("Authorization", "Bearer " + secret)]).status, 200)
            }
        }
        // After 24 h the old secret is refused; the old public key still works until 30 days.
        h.clock.advance(86_400)
        assertError(h.send(.get, "/v1/subscriptions/\(publicKey)/u", headers: [("Authorization", "Bearer " + Harness.secretKey)]),
                    status: 401, code: "AUTH_INVALID_SECRET_KEY")
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u",
                              headers: [("Authorization", "Bearer " + secretKey)]).status, 200)
        h.clock.advance(29 * 86_400)
        assertError(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u"), status: 401, code: "AUTH_INVALID_PUBLIC_KEY")
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(publicKey)/u").status, 200)
        // Expired keys are no longer shown.
        let shown = h.admin(.get, "/v1/admin/projects/00000000-0000-0000-0000-000000000900")
        XCTAssertEqual(shown.json?["public_keys"]?.arrayValue?.count, 1)
        XCTAssertEqual(shown.json?["secret_keys"]?.arrayValue?.count, 1)
        XCTAssertNil(shown.json?["secret_key"])
        assertError(h.admin(.post, "/v1/admin/projects/00000000-0000-0000-0000-000000000999/rotate-keys"),
                    status: 404, code: "PROJECT_NOT_FOUND")
    }

    func testRotatePublicKeyOnlyWithGraceThenAtOnce() throws {
        let h = Harness()
        let path = "/v1/admin/projects/00000000-0000-0000-0000-000000000900/rotate-keys"
        let first = h.admin(.post, path, body: #"{"key":"public","grace_seconds":2}"#)
        XCTAssertEqual(first.status, 200, first.text)
        XCTAssertNil(first.json?["secret_key"], "the secret key did not change, so none is shown")
        let second = try XCTUnwrap(first.json?["public_key"]?.stringValue)
        XCTAssertEqual(first.json?["public_keys"]?.arrayValue?.last?["expires_at"], "2026-06-01T00:00:02.000Z")
        XCTAssertEqual(first.json?["secret_keys"]?.arrayValue?.count, 1)
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u",
                              headers: [("Authorization", "Bearer " + Harness.secretKey)]).status, 200)
        h.clock.advance(1.999)
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u").status, 200)
        h.clock.advance(0.001)
        assertError(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u"), status: 401, code: "AUTH_INVALID_PUBLIC_KEY")

        // A second rotation with grace 0 cuts the replaced key at once.
        let cut = h.admin(.post, path, body: #"{"key":"public","grace_seconds":0}"#)
        XCTAssertEqual(cut.status, 200, cut.text)
        let third = try XCTUnwrap(cut.json?["public_key"]?.stringValue)
        assertError(h.send(.get, "/v1/subscriptions/\(second)/u"), status: 401, code: "AUTH_INVALID_PUBLIC_KEY")
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(third)/u").status, 200)
        XCTAssertEqual(cut.json?["public_keys"]?.arrayValue?.count, 1)

        // The secret alone, at once: the old secret fails, the public key is unchanged.
        let secret = h.admin(.post, path, body: #"{"key":"secret","grace_seconds":0}"#)
        let newSecret = try XCTUnwrap(secret.json?["secret_key"]?.stringValue)
        XCTAssertEqual(secret.json?["public_key"]?.stringValue, third)
        assertError(h.send(.get, "/v1/subscriptions/\(third)/u", headers: [("Authorization", "Bearer " + Harness.secretKey)]),
                    status: 401, code: "AUTH_INVALID_SECRET_KEY")
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(third)/u",
                              headers: [("Authorization", "Bearer " + newSecret)]).status, 200)
    }

    func testRepeatedRotationsNeverExtendAKeyAndKeepAtMostThreeLive() throws {
        let h = Harness()
        let path = "/v1/admin/projects/00000000-0000-0000-0000-000000000900/rotate-keys"
        XCTAssertEqual(h.admin(.post, path, body: #"{"key":"public","grace_seconds":100}"#).status, 200)
        h.clock.advance(10)
        // The key being replaced gets the new grace (1000 s); the already-retiring original keeps its 100 s.
        let r = h.admin(.post, path, body: #"{"key":"public","grace_seconds":1000}"#)
        XCTAssertEqual(r.json?["public_keys"]?.arrayValue?.map { $0["expires_at"] ?? .null }, [
            .null, "2026-06-01T00:16:50.000Z", "2026-06-01T00:01:40.000Z",
        ])
        h.clock.advance(10)
        let four = h.admin(.post, path, body: #"{"key":"public"}"#)
        XCTAssertEqual(four.json?["public_keys"]?.arrayValue?.count, KeyRotationRules.maxLiveKeysPerKind)
        // The oldest (the original) was dropped by the bound.
        assertError(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u"), status: 401, code: "AUTH_INVALID_PUBLIC_KEY")
    }

    func testRotateValidation() {
        let h = Harness()
        let path = "/v1/admin/projects/00000000-0000-0000-0000-000000000900/rotate-keys"
        assertError(h.admin(.post, path, body: #"{"key":"both","grace_seconds":-1}"#), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["key"], "message": "Invalid enum value. Expected 'public' | 'secret'"],
                              ["path": ["grace_seconds"], "message": "Number must be greater than or equal to 0"]])
        assertError(h.admin(.post, path, body: #"{"grace_seconds":31536001}"#), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["grace_seconds"], "message": "Number must be less than or equal to 31536000"]])
        assertError(h.admin(.post, path, body: #"{"grace_seconds":1.5}"#), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["grace_seconds"], "message": "Expected integer"]])
        assertError(h.admin(.post, path, body: #"{"grace_seconds":"10"}"#), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["grace_seconds"], "message": "Expected integer"]])
        // Nothing rotated.
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u").status, 200)
        XCTAssertEqual(try h.projects.keys(projectId: FakeProjectStore.uuid(900)).count, 2)
        // {} is the same as no body: both keys.
        let both = h.admin(.post, path, body: "{}")
        XCTAssertEqual(both.status, 200, both.text)
        XCTAssertNotNil(both.json?["secret_key"]?.stringValue)
        XCTAssertEqual(both.json?["public_keys"]?.arrayValue?.count, 2)
        XCTAssertEqual(both.json?["secret_keys"]?.arrayValue?.count, 2)
        // A grace without a key applies to both: 0 cuts both old pairs at once.
        let cut = h.admin(.post, path, body: #"{"grace_seconds":0}"#)
        XCTAssertEqual(cut.json?["public_keys"]?.arrayValue?.count, 1)
        XCTAssertEqual(cut.json?["secret_keys"]?.arrayValue?.count, 1)
        assertError(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u"), status: 401, code: "AUTH_INVALID_PUBLIC_KEY")
    }

    func testProducts() {
        let h = Harness()
        let base = "/v1/admin/projects/00000000-0000-0000-0000-000000000900/products"
        let put = h.admin(.put, base + "/com.myapp.pro.monthly", body: #"{"entitlements":["pro","ads_free","pro"]}"#)
        XCTAssertEqual(put.status, 200)
        XCTAssertEqual(put.text, #"{"product_id":"com.myapp.pro.monthly","entitlements":["ads_free","pro"]}"#)
        let list = h.admin(.get, base)
        XCTAssertEqual(list.status, 200)
        XCTAssertEqual(list.text, #"{"products":[{"product_id":"com.myapp.lifetime","entitlements":["extras","pro"]},"#
            + #"{"product_id":"com.myapp.pro.monthly","entitlements":["ads_free","pro"]},"#
            + #"{"product_id":"com.myapp.pro.yearly","entitlements":["pro"]}]}"#)
        let deleted = h.admin(.delete, base + "/com.myapp.pro.monthly")
        XCTAssertEqual(deleted.status, 204)
        assertError(h.admin(.delete, base + "/com.myapp.pro.monthly"), status: 404, code: "PRODUCT_NOT_FOUND",
                    error: "Product not found.")
        let missingProject = "/v1/admin/projects/00000000-0000-0000-0000-000000000999/products"
        assertError(h.admin(.get, missingProject), status: 404, code: "PROJECT_NOT_FOUND")
        assertError(h.admin(.put, missingProject + "/p", body: #"{"entitlements":[]}"#), status: 404,
                    code: "PROJECT_NOT_FOUND")
        assertError(h.admin(.delete, missingProject + "/p"), status: 404, code: "PROJECT_NOT_FOUND")
    }

    func testProductValidation() {
        let h = Harness()
        let base = "/v1/admin/projects/00000000-0000-0000-0000-000000000900/products/p"
        assertError(h.admin(.put, base, body: "{}"), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["entitlements"], "message": "Required"]])
        assertError(h.admin(.put, base, body: #"{"entitlements":"pro"}"#), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["entitlements"], "message": "Expected array"]])
        assertError(h.admin(.put, base, body: #"{"entitlements":["",1]}"#), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["entitlements", "0"], "message": "String must contain at least 1 character(s)"],
                              ["path": ["entitlements", "1"], "message": "Expected string"]])
        let many = "[" + (0...100).map { "\"e\($0)\"" }.joined(separator: ",") + "]"
        assertError(h.admin(.put, base, body: #"{"entitlements":"# + many + "}"), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["entitlements"], "message": "Array must contain at most 100 element(s)"]])
        let long = String(repeating: "p", count: 257)
        assertError(h.admin(.put, String(base.dropLast()) + long, body: #"{"entitlements":[]}"#), status: 400,
                    code: "VALIDATION_ERROR",
                    details: [["path": ["productId"], "message": "String must contain at most 256 character(s)"]])
    }

    func testInvalidUUIDIs400() {
        let h = Harness()
        for (method, path) in [(HTTPMethod.get, "/v1/admin/projects/123"), (.delete, "/v1/admin/projects/zz"),
                               (.post, "/v1/admin/projects/123/rotate-keys"), (.get, "/v1/admin/projects/x/products")] {
            assertError(h.admin(method, path), status: 400, code: "VALIDATION_ERROR",
                        details: [["path": ["id"], "message": "Invalid uuid"]])
        }
    }

    // MARK: - Admin auth

    func testAdminDisabledWithoutToken() {
        for token in [nil, ""] as [String?] {
            let h = Harness(adminToken: token)
            for (method, path) in [(HTTPMethod.get, "/v1/admin/projects"), (.post, "/v1/admin/projects"),
                                   (.get, "/v1/admin/projects/123")] {
                assertError(h.admin(method, path), status: 404, code: "ADMIN_API_DISABLED",
                            error: "Admin API is disabled.")
            }
        }
    }

    func testWrongOrMissingAdminToken() {
        let h = Harness()
        for headers in [[], [("Authorization", "Bearer wrong")], [("Authorization", Harness.adminToken)],
                        [("Authorization", "Basic " + Harness.adminToken)],
                        [("Authorization", "Bearer " + Harness.adminToken + "x")],
                        [("Authorization", "Bearer " + Harness.secretKey)]] {
            assertError(h.send(.get, "/v1/admin/projects", headers: headers), status: 401,
                        code: "AUTH_INVALID_ADMIN_TOKEN", error: "Invalid admin token.",
                        suggestion: "Send Authorization: Bearer <BOUNCER_ADMIN_TOKEN>.")
        }
        XCTAssertEqual(h.send(.get, "/v1/admin/projects",
                              headers: [("Authorization", "bearer " + Harness.adminToken)]).status, 200)
        // Auth before validation: a bad id with a bad token is 401, not 400.
        assertError(h.send(.get, "/v1/admin/projects/123"), status: 401, code: "AUTH_INVALID_ADMIN_TOKEN")
    }

    func testCreateRequiresJSONContentType() {
        let h = Harness()
        let response = h.send(.post, "/v1/admin/projects",
                              headers: [("Authorization", "Bearer " + Harness.adminToken), ("Content-Type", "text/plain")],
                              body: createBody)
        assertError(response, status: 415, code: "UNSUPPORTED_MEDIA_TYPE",
                    suggestion: "Send the JSON body with Content-Type: application/json.")
        XCTAssertEqual(try? h.projects.allProjects().count, 1, "nothing created")
    }
}
