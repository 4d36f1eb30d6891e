import Foundation
import JSON
import Postgres
import XCTest

/// Key rotation with a grace period and `app_account_token_policy`, against the real `bouncer serve` process and its
/// database: during the grace the old and the new key both work on every route that takes them, after it the old
/// one gets the usual 401; a purchase carrying Apple's appAccountToken binds only to the user the policy allows.
extension ContractE2ETests {
    /// Waits until `deadline` (the process clock and ours are the same machine's).
    private func sleep(until deadline: Date) {
        let wait = deadline.timeIntervalSinceNow
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
    }

    private func rotate(_ tenant: Tenant, _ body: JSONValue?) throws -> JSONValue {
        let path = "/v1/admin/projects/\(tenant.id)/rotate-keys"
        let r = try body.map { try api.client.post(path, json: $0, headers: E2E.admin) }
            ?? api.client.request("POST", path, headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        return try r.json()
    }

    func testPublicKeyRotationOverlapsOnReceiptsSubscriptionsAndTheWebhook() throws {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let grace = 4.0
        let rotatedAt = Date()
        let rotated = try rotate(tenant, ["key": "public", "grace_seconds": 4])
        let newKey = try XCTUnwrap(rotated["public_key"]?.stringValue)
        XCTAssertNotEqual(newKey, tenant.publicKey)
        XCTAssertNil(rotated["secret_key"], "only the public key rotated: no secret is shown")
        let publicKeys = try XCTUnwrap(rotated["public_keys"]?.arrayValue)
        XCTAssertEqual(publicKeys.map { $0["key"] }, [.string(newKey), .string(tenant.publicKey)])
        XCTAssertEqual(publicKeys[0]["expires_at"], .null)
        let expiresAt = try XCTUnwrap(publicKeys[1]["expires_at"]?.stringValue)
        let created = try XCTUnwrap(publicKeys[0]["created_at"]?.stringValue)
        XCTAssertEqual(try Self.parseISO(expiresAt).timeIntervalSince(try Self.parseISO(created)), grace)
        XCTAssertEqual(rotated["secret_keys"]?.arrayValue?.count, 1)

        // During the grace: both keys answer on receipts (201), subscriptions (200) and the webhook (200).
        for key in [tenant.publicKey, newKey] {
            let user = "rot_\(E2E.uniqueId())"
            let payload = TransactionPayload(bundleId: tenant.bundleId)
            let receipt = try api.postReceipt(key, try payload.mint(), user: user)
            XCTAssertEqual(receipt.status, 201, "\(key): \(receipt)")
            let read = try api.user(key, user)
            XCTAssertEqual(read.status, 200, read.description)
            XCTAssertEqual(try read.json()["entitlements"], ["pro"])
            try api.deliver(key, NotificationPayload("DID_RENEW", bundleId: tenant.bundleId, transaction: payload))
        }
        XCTAssertLessThan(Date().timeIntervalSince(rotatedAt), grace, "the overlap checks outlasted the grace; rerun on a quieter machine")

        // After the grace: the old key is refused everywhere with the usual code, the new one keeps working.
        sleep(until: rotatedAt.addingTimeInterval(grace + 0.3))
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        assertError(try api.postReceipt(tenant.publicKey, try payload.mint(), user: "late"), 401, "AUTH_INVALID_PUBLIC_KEY")
        assertError(try api.user(tenant.publicKey, "late"), 401, "AUTH_INVALID_PUBLIC_KEY")
        let late = NotificationPayload("DID_RENEW", bundleId: tenant.bundleId, transaction: payload)
        assertError(try api.notify(tenant.publicKey, try late.mint()), 401, "AUTH_INVALID_PUBLIC_KEY")
        XCTAssertEqual(try api.postReceipt(newKey, try payload.mint(), user: "late").status, 201)
        try api.deliver(newKey, late)
        let shown = try api.client.get("/v1/admin/projects/\(tenant.id)", headers: E2E.admin).json()
        XCTAssertEqual(shown["public_keys"]?.arrayValue?.map { $0["key"] }, [.string(newKey)])
    }

    func testSecretKeyRotationKeepsTheOldSecretForItsGraceAndStoresOnlyHashes() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject(extra: [("require_secret_key_for_reads", true)])
        let grace = 3.0
        let rotatedAt = Date()
        let rotated = try rotate(tenant, ["key": "secret", "grace_seconds": 3])
        let newSecret = try XCTUnwrap(rotated["secret_key"]?.stringValue)
        XCTAssertEqual(rotated["public_key"], .string(tenant.publicKey), "the public key did not change")
        XCTAssertEqual(rotated["secret_keys"]?.arrayValue?.map { $0["last4"] },
                       [.string(String(newSecret.suffix(4))), .string(String(tenant.secretKey.suffix(4)))])
        for secret in [tenant.secretKey, newSecret] {
            XCTAssertEqual(try api.user(tenant.publicKey, "u", headers: ["Authorization": "Bearer \(secret)"]).status, 200)
        }
        XCTAssertLessThan(Date().timeIntervalSince(rotatedAt), grace)

        // At rest: two secret rows, each exactly SHA-256 of its key (computed by PostgreSQL), no key in clear.
        for secret in [tenant.secretKey, newSecret] {
            let rows = try db.query("""
                SELECT count(*)::int8 AS n FROM project_keys WHERE project_id = \(tenant.id)::uuid AND kind = 'secret'
                AND secret_key_hash = sha256(convert_to(\(secret), 'UTF8')) AND public_key IS NULL
                """)
            XCTAssertEqual(try rows.first?.decode("n", as: Int64.self), 1)
            let clear = try db.query("""
                SELECT count(*)::int8 AS n FROM project_keys
                WHERE position(\(String(secret.dropFirst(3))) IN encode(secret_key_hash, 'hex') || coalesce(public_key, '')) > 0
                """)
            XCTAssertEqual(try clear.first?.decode("n", as: Int64.self), 0, "secret key stored in clear")
        }

        sleep(until: rotatedAt.addingTimeInterval(grace + 0.3))
        assertError(try api.user(tenant.publicKey, "u", headers: ["Authorization": "Bearer \(tenant.secretKey)"]),
                    401, "AUTH_INVALID_SECRET_KEY")
        XCTAssertEqual(try api.user(tenant.publicKey, "u", headers: ["Authorization": "Bearer \(newSecret)"]).status, 200)
    }

    func testRotationWithoutBodyRotatesBothWithTheirDefaultGraces() throws {
        let api = try api
        let tenant = try api.createProject()
        let rotated = try rotate(tenant, nil)
        let newKey = try XCTUnwrap(rotated["public_key"]?.stringValue)
        let newSecret = try XCTUnwrap(rotated["secret_key"]?.stringValue)
        func grace(_ field: String) throws -> TimeInterval {
            let keys = try XCTUnwrap(rotated[field]?.arrayValue)
            XCTAssertEqual(keys.count, 2, field)
            let created = try Self.parseISO(try XCTUnwrap(keys[0]["created_at"]?.stringValue))
            return try Self.parseISO(try XCTUnwrap(keys[1]["expires_at"]?.stringValue)).timeIntervalSince(created)
        }
        XCTAssertEqual(try grace("public_keys"), 30 * 86_400)
        XCTAssertEqual(try grace("secret_keys"), 86_400)
        // Every old/new combination works.
        for key in [tenant.publicKey, newKey] {
            for secret in [tenant.secretKey, newSecret] {
                XCTAssertEqual(try api.user(key, "u", headers: ["Authorization": "Bearer \(secret)"]).status, 200)
            }
        }
        // Validation: nothing rotates.
        let bad = try api.client.post("/v1/admin/projects/\(tenant.id)/rotate-keys",
                                      json: ["key": "both", "grace_seconds": 31_536_001], headers: E2E.admin)
        assertError(bad, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try bad.json()["details"], [
            ["path": ["key"], "message": "Invalid enum value. Expected 'public' | 'secret'"],
            ["path": ["grace_seconds"], "message": "Number must be less than or equal to 31536000"],
        ])
        let after = try api.client.get("/v1/admin/projects/\(tenant.id)", headers: E2E.admin).json()
        XCTAssertEqual(after["public_key"], .string(newKey))
        XCTAssertEqual(after["public_keys"]?.arrayValue?.count, 2)
    }

    func testCLIRotatesWithFlagsAndEnforcesTheEntitlementCap() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        let run = try cli(["project", "rotate-keys", tenant.id, "--key", "secret", "--grace-seconds", "60"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let rotated = try JSONParser.parse(run.stdout)
        let newSecret = try XCTUnwrap(rotated["secret_key"]?.stringValue)
        XCTAssertEqual(rotated["public_key"], .string(tenant.publicKey))
        XCTAssertEqual(rotated["secret_keys"]?.arrayValue?.count, 2)
        // The CLI is another process: its change reaches the server's cache through the announcement.
        XCTAssertTrue(try E2E.eventually {
            try api.user(tenant.publicKey, "u", headers: ["Authorization": "Bearer \(newSecret)"]).status == 200
        })
        for secret in [tenant.secretKey, newSecret] {
            XCTAssertEqual(try api.user(tenant.publicKey, "u", headers: ["Authorization": "Bearer \(secret)"]).status, 200)
        }
        let bad = try cli(["project", "rotate-keys", tenant.id, "--key", "both"])
        XCTAssertEqual(bad.status, 2, bad.stderr)
        let tooLong = try cli(["project", "rotate-keys", tenant.id, "--grace-seconds", "31536001"])
        XCTAssertEqual(tooLong.status, 2, tooLong.stderr)
        XCTAssertTrue(tooLong.stderr.contains("grace_seconds: Number must be less than or equal to 31536000"), tooLong.stderr)
        XCTAssertEqual(try db.count("project_keys", project: tenant.id), 3, "the refused rotations changed nothing")

        // The admin API's 100-entitlement cap now applies to the CLI (it stored 101 before: it had its own rules).
        let entitlements = (0...100).map { "e\($0)" }
        let capped = try cli(["product", "set", tenant.id, "com.e2e.many"] + entitlements)
        XCTAssertEqual(capped.status, 2, capped.stdout + capped.stderr)
        XCTAssertTrue(capped.stderr.contains("entitlements: Array must contain at most 100 element(s)"), capped.stderr)
        XCTAssertEqual(try db.count("products", project: tenant.id), 0)
        let hundred = try cli(["product", "set", tenant.id, "com.e2e.many"] + entitlements.dropLast())
        XCTAssertEqual(hundred.status, 0, hundred.stderr)

        // Settings the CLI shares with the API: update and the token policy.
        let update = try cli(["project", "update", tenant.id, "--app-account-token-policy", "prefer", "--name", "Renamed"])
        XCTAssertEqual(update.status, 0, update.stderr)
        let shown = try api.client.get("/v1/admin/projects/\(tenant.id)", headers: E2E.admin).json()
        XCTAssertEqual(shown["app_account_token_policy"], "prefer")
        XCTAssertEqual(shown["name"], "Renamed")
        XCTAssertEqual(try cli(["project", "update", tenant.id, "--name", String(repeating: "n", count: 201)]).status, 2)
    }

    // MARK: - app_account_token_policy

    private func owners(_ tenant: Tenant, _ originalTransactionId: String) throws -> [String] {
        try db.query("""
            SELECT user_id FROM subscriptions WHERE project_id = \(tenant.id)::uuid
            AND original_transaction_id = \(originalTransactionId) AND revoked_at IS NULL ORDER BY user_id
            """).map { try $0.decode("user_id", as: String.self) }
    }

    func testRequireMatchBindsOnlyTheTokensUser() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject(extra: [("app_account_token_policy", "require_match")])
        try api.mapProduct(tenant)
        let token = UUID().uuidString.lowercased()
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.appAccountToken = token
        let jws = try payload.mint()

        // A leaked JWS posted for another user: 403, nothing written.
        let stolen = try api.postReceipt(tenant.publicKey, jws, user: "attacker")
        assertError(stolen, 403, "APP_ACCOUNT_TOKEN_MISMATCH",
                    error: "The transaction's appAccountToken does not match the posted user_id.")
        XCTAssertTrue(try stolen.json()["suggestion"]?.stringValue?.contains("Product.PurchaseOption.appAccountToken") ?? false)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 0)
        XCTAssertEqual(try db.count("purchases", project: tenant.id), 0)
        XCTAssertEqual(try db.count("subscriptions", project: tenant.id), 0)

        // The owner, in upper case: 201, bound in the canonical (lowercase) form, so either spelling is one holder.
        let mine = try api.postReceipt(tenant.publicKey, jws, user: token.uppercased())
        XCTAssertEqual(mine.status, 201, mine.description)
        XCTAssertEqual(try mine.json()["user_id"], .string(token))
        XCTAssertEqual(try mine.json()["user_id_source"], "request")
        XCTAssertEqual(try owners(tenant, payload.originalTransactionId), [token])
    }

    func testPreferBindsToTheTokensUserWhateverWasPosted() throws {
        let api = try api
        let tenant = try api.createProject(extra: [("app_account_token_policy", "prefer")])
        try api.mapProduct(tenant)
        let token = UUID().uuidString.lowercased()
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.appAccountToken = token.uppercased()
        let r = try api.postReceipt(tenant.publicKey, try payload.mint(), user: "attacker")
        XCTAssertEqual(r.status, 201, r.description)
        var expected = expectedReceipt(payload, entitlements: ["pro"], status: "active")
        if case .object(var object) = expected {
            object["user_id"] = .string(token)
            object["user_id_source"] = "app_account_token"
            expected = .object(object)
        }
        XCTAssertEqual(try r.json(), expected)
        XCTAssertEqual(try owners(tenant, payload.originalTransactionId), [token])
        XCTAssertEqual(try api.user(tenant.publicKey, "attacker").json()["status"], "none")
        XCTAssertEqual(try api.user(tenant.publicKey, token).json()["status"], "active")
    }

    func testIgnoreKeepsTodaysBehaviour() throws {
        let api = try api
        let tenant = try api.createProject()
        XCTAssertEqual(tenant.created["app_account_token_policy"], "ignore")
        try api.mapProduct(tenant)
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.appAccountToken = UUID().uuidString.lowercased()
        let r = try api.postReceipt(tenant.publicKey, try payload.mint(), user: "whoever")
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json(), expectedReceipt(payload, entitlements: ["pro"], status: "active"))
        XCTAssertEqual(try owners(tenant, payload.originalTransactionId), ["whoever"])
    }

    static func parseISO(_ text: String) throws -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = formatter.date(from: text) else { throw HarnessFailure(description: "not ISO 8601: \(text)") }
        return date
    }
}
