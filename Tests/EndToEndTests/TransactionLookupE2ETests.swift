import Foundation
import JSON
import XCTest

/// Lookups by transaction id over the real `bouncer serve` process, real PostgreSQL and a fake Apple over real TLS
/// (`FakeAppleServer`, trusted through BOUNCER_APPLE_API_CA_FILE): credentials stored through the admin API with a
/// key whose public half the fake checks on every request.
final class TransactionLookupE2ETests: AppleConnectedTestCase {
    /// One fake Apple and one server for the class (the server's URLs point at the fake).
    override class func connect() throws -> AppleConnectedBouncer {
        // The per-client lookup budget is LookupBudgetE2ETests' subject: every test here comes from 127.0.0.1.
        try AppleConnectedBouncer(label: "lookup", overrides: ["BOUNCER_APPLE_API_TIMEOUT_SECONDS": "3",
                                                               "BOUNCER_APPLE_LOOKUP_RATE_CLIENT": "0"])
    }

    /// A project with the product mapped and credentials stored; the fake expects its key and bundle id.
    private func tenant(environments: [String]? = nil, credentials: Bool = true,
                        settings: [(String, JSONValue)] = []) throws -> (Tenant, FakeAppleServer.Key) {
        try Self.fixture.get().createProject(
            settings: (environments.map { [("environments", .array($0.map { .string($0) }))] } ?? []) + settings,
            keyId: "LOOKUP0001", credentials: credentials)
    }

    private func lookup(_ tenant: Tenant, _ transactionId: String, user: String? = nil,
                        headers: [String: String] = [:]) throws -> HTTPResponse {
        var pairs: [(String, JSONValue)] = [("transaction_id", .string(transactionId))]
        if let user { pairs.append(("user_id", .string(user))) }
        return try api.client.post("/v1/receipts/\(tenant.publicKey)", json: .object(JSONObject(pairs)), headers: headers)
    }

    /// Every row the project has in the tables a receipt writes.
    private func rows(_ tenant: Tenant) throws -> [String] {
        try db.query("""
            SELECT to_jsonb(t)::text AS j FROM transactions t WHERE project_id = \(tenant.id)::uuid
            UNION ALL SELECT to_jsonb(p)::text FROM purchases p WHERE project_id = \(tenant.id)::uuid
            UNION ALL SELECT to_jsonb(s)::text FROM subscriptions s WHERE project_id = \(tenant.id)::uuid
            """).map { try $0.decode("j", as: String.self) }
    }

    private func requests(for id: String) throws -> [FakeAppleServer.ReceivedRequest] {
        try apple.requests.filter { $0.id == id }
    }

    // MARK: - Success

    func testLookupByIdAsksProductionVerifiesAndRecordsLikeAPostedJWS() throws {
        let (tenant, key) = try tenant()
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.environment = "Production"
        try apple.setTransaction(payload.transactionId, signed: try payload.mint(), environment: .production)

        let r = try lookup(tenant, payload.transactionId, user: "alice")
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json(), expectedReceipt(payload, entitlements: ["pro"], status: "active"))

        let row = try XCTUnwrap(try db.query("""
            SELECT transaction_id, original_transaction_id, product_id, environment, type, source,
                   (extract(epoch FROM signed_date) * 1000)::int8 AS signed_ms,
                   (extract(epoch FROM expires_date) * 1000)::int8 AS expires_ms
            FROM transactions WHERE project_id = \(tenant.id)::uuid
            """).first)
        XCTAssertEqual(try row.decode("transaction_id", as: String.self), payload.transactionId)
        XCTAssertEqual(try row.decode("original_transaction_id", as: String.self), payload.originalTransactionId)
        XCTAssertEqual(try row.decode("product_id", as: String.self), payload.productId)
        XCTAssertEqual(try row.decode("environment", as: String.self), "Production")
        XCTAssertEqual(try row.decode("type", as: String.self), payload.type)
        XCTAssertEqual(try row.decode("source", as: String.self), "lookup")
        XCTAssertEqual(try row.decode("signed_ms", as: Int64.self), payload.signedDate)
        XCTAssertEqual(try row.decode("expires_ms", as: Int64.self), payload.expiresDate)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 1)
        let bound = try db.query("SELECT user_id FROM subscriptions WHERE project_id = \(tenant.id)::uuid")
            .map { try $0.decode("user_id", as: String.self) }
        XCTAssertEqual(bound, ["alice"])
        // The user sees it like a posted purchase.
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json()["entitlements"], ["pro"])

        // Apple was asked once, in Production, with a JWT the fake accepted for this project's key.
        let asked = try requests(for: payload.transactionId)
        XCTAssertEqual(asked.map(\.environment), [.production])
        XCTAssertEqual(asked.map(\.jwtProblem), [nil])
        XCTAssertEqual(asked.first?.jwtClaims?["iss"], .string(key.issuerId))
        XCTAssertEqual(asked.first?.jwtClaims?["bid"], .string(tenant.bundleId))

        // The same lookup again: idempotent, one stored transaction.
        XCTAssertEqual(try lookup(tenant, payload.transactionId, user: "alice").status, 201)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 1)
        // The private key never reached the log.
        XCTAssertFalse(try server.stderr.contains(key.privateKeyPEM.split(separator: "\n")[1]))
    }

    func testNotFoundInProductionFallsBackToSandbox() throws {
        let (tenant, _) = try tenant()
        let payload = TransactionPayload(bundleId: tenant.bundleId)   // Sandbox
        try apple.setTransaction(payload.transactionId, signed: try payload.mint(), environment: .sandbox)
        let r = try lookup(tenant, payload.transactionId)
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json(), expectedReceipt(payload, entitlements: ["pro"], status: "active"))
        XCTAssertEqual(try requests(for: payload.transactionId).map(\.environment), [.production, .sandbox])
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 1)
    }

    func testASandboxOnlyProjectAsksOnlySandbox() throws {
        let (tenant, _) = try tenant(environments: ["Sandbox"])
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        try apple.setTransaction(payload.transactionId, signed: try payload.mint(), environment: .sandbox)
        XCTAssertEqual(try lookup(tenant, payload.transactionId).status, 201)
        XCTAssertEqual(try requests(for: payload.transactionId).map(\.environment), [.sandbox])
    }

    // MARK: - Who may move a purchase

    /// A Production purchase held by `holder` (posted as a signed JWS) that Apple also serves by id.
    private func heldPurchase(_ tenant: Tenant, holder: String, appAccountToken: String? = nil) throws -> TransactionPayload {
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.environment = "Production"
        payload.appAccountToken = appAccountToken
        try apple.setTransaction(payload.transactionId, signed: try payload.mint(), environment: .production)
        let posted = try api.postReceipt(tenant.publicKey, try payload.mint(), user: holder)
        XCTAssertEqual(posted.status, 201, posted.description)
        return payload
    }

    /// The project's holders (`user:live`) and ownership moves, sorted.
    private func holders(_ tenant: Tenant) throws -> [String] {
        try db.query("""
            SELECT user_id || ':' || (revoked_at IS NULL)::text AS j FROM subscriptions WHERE project_id = \(tenant.id)::uuid
            UNION ALL SELECT 'moved ' || from_user_id || '>' || to_user_id FROM ownership_events
                WHERE project_id = \(tenant.id)::uuid
            """).map { try $0.decode("j", as: String.self) }.sorted()
    }

    /// Issue 21: a transaction id is public (`GET /v1/subscriptions` shows it), so with the public key alone a lookup
    /// never takes a purchase from the user who holds it — under `transfer` nor `share` — and tells nothing of them.
    func testAPublicKeyLookupNeverMovesAPurchaseFromItsHolder() throws {
        for policy in ["transfer", "share"] {
            let (tenant, _) = try tenant(settings: [("transfer_policy", .string(policy))])
            let victim = "victim-\(E2E.uniqueId())"
            let payload = try heldPurchase(tenant, holder: victim)
            let before = try rows(tenant)
            XCTAssertEqual(try holders(tenant), ["\(victim):true"])

            let r = try lookup(tenant, payload.transactionId, user: "attacker")
            assertError(r, 409, "PURCHASE_OWNED_BY_ANOTHER_USER", error: "This purchase belongs to another user.",
                        suggestion: "A transaction id does not prove who bought the purchase, so with the public key "
                            + "alone it never moves a purchase from the user who holds it. Post the signed transaction "
                            + "from the device (signed_transaction_info), or call from your backend with "
                            + "Authorization: Bearer sk_... to apply the project's transfer_policy.")
            XCTAssertFalse(r.text.contains(victim), "\(policy): \(r.text)")
            XCTAssertEqual(try rows(tenant), before, policy)
            XCTAssertEqual(try holders(tenant), ["\(victim):true"], policy)
            XCTAssertEqual(try api.user(tenant.publicKey, victim).json()["entitlements"], ["pro"], policy)
            XCTAssertEqual(try api.user(tenant.publicKey, "attacker").json()["entitlements"], [], policy)

            // The holder's own lookup changes nothing and answers 201: it was already theirs.
            XCTAssertEqual(try lookup(tenant, payload.transactionId, user: victim).status, 201, policy)
            XCTAssertEqual(try holders(tenant), ["\(victim):true"], policy)
        }
    }

    /// With the secret key (the backend, which knows who its user is) the project's transfer policy applies, as for
    /// a posted JWS; a wrong secret key is refused before anything is asked or written.
    func testASecretKeyLookupAppliesTheTransferPolicy() throws {
        let (tenant, _) = try tenant()
        let payload = try heldPurchase(tenant, holder: "first")
        let before = try rows(tenant)

        let wrong = try lookup(tenant, payload.transactionId, user: "second",
                               headers: ["Authorization": "Bearer sk_\(String(repeating: "0", count: 48))"])
        assertError(wrong, 401, "AUTH_INVALID_SECRET_KEY")
        XCTAssertEqual(try rows(tenant), before)

        let moved = try lookup(tenant, payload.transactionId, user: "second",
                               headers: ["Authorization": "Bearer \(tenant.secretKey)"])
        XCTAssertEqual(moved.status, 201, moved.description)
        XCTAssertEqual(try holders(tenant), ["first:false", "moved first>second", "second:true"])
    }

    /// A purchase whose signed appAccountToken names the posting user is theirs by Apple's signature: under
    /// `require_match` (and `prefer`) the policy applies to a public-key lookup too. Here a holder bound before the
    /// project turned `require_match` on loses it to the token's user; under `ignore` the token is no identity and
    /// proves nothing, so the lookup is refused like any other.
    func testALookupWhoseAppAccountTokenNamesThePosterAppliesThePolicy() throws {
        let (tenant, _) = try tenant()
        let owner = UUID().uuidString.lowercased()
        let payload = try heldPurchase(tenant, holder: "old-id", appAccountToken: owner)
        let before = try rows(tenant)

        assertError(try lookup(tenant, payload.transactionId, user: owner), 409, "PURCHASE_OWNED_BY_ANOTHER_USER")
        XCTAssertEqual(try rows(tenant), before)

        let patched = try api.client.send("PATCH", "/v1/admin/projects/\(tenant.id)",
                                          json: ["app_account_token_policy": "require_match"], headers: E2E.admin)
        XCTAssertEqual(patched.status, 200, patched.description)
        // Swift's UUID().uuidString spelling: the same user, stored in the canonical (lowercase) form.
        let moved = try lookup(tenant, payload.transactionId, user: owner.uppercased())
        XCTAssertEqual(moved.status, 201, moved.description)
        XCTAssertEqual(try moved.json()["user_id"], .string(owner))
        XCTAssertEqual(try holders(tenant), ["moved old-id>\(owner)", "old-id:false", "\(owner):true"].sorted())
        // The other spelling is the same holder: nothing moves.
        XCTAssertEqual(try lookup(tenant, payload.transactionId, user: owner).status, 201)
        XCTAssertEqual(try holders(tenant), ["moved old-id>\(owner)", "old-id:false", "\(owner):true"].sorted())
    }

    /// Issue 21: under `require_match` a user id compared with an appAccountToken has one form, Apple's lowercase
    /// UUID, so `UUID().uuidString` (upper case) and the token's spelling are one holder: posting the other spelling
    /// moves nothing, and reads by either spelling find the purchase.
    func testTwoSpellingsOfOneUUIDAreOneHolder() throws {
        let (tenant, _) = try tenant(settings: [
            ("app_account_token_policy", "require_match"),
            ("app_purchase_entitlements", ["purchased_before_version": "2.0", "entitlements": ["legacy"]]),
        ])
        let owner = UUID().uuidString.lowercased()
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.appAccountToken = owner
        let upper = try api.postReceipt(tenant.publicKey, try payload.mint(), user: owner.uppercased())
        XCTAssertEqual(upper.status, 201, upper.description)
        XCTAssertEqual(try upper.json()["user_id"], .string(owner))
        XCTAssertEqual(try holders(tenant), ["\(owner):true"])
        let lower = try api.postReceipt(tenant.publicKey, try payload.mint(), user: owner)
        XCTAssertEqual(lower.status, 201, lower.description)
        XCTAssertEqual(try holders(tenant), ["\(owner):true"])
        // An app transaction and a grant posted with Swift's spelling land on the same user.
        let app = try api.postAppTransaction(tenant.publicKey, try AppTransactionPayload(bundleId: tenant.bundleId).mint(),
                                             user: owner.uppercased())
        XCTAssertEqual(app.status, 201, app.description)
        let grant = try api.client.post("/v1/admin/projects/\(tenant.id)/users/\(owner.uppercased())/grants",
                                        json: ["entitlement": "gift", "reason": "support"], headers: E2E.admin)
        XCTAssertEqual(grant.status, 201, grant.description)
        XCTAssertEqual(try grant.json()["user_id"], .string(owner))
        for spelling in [owner, owner.uppercased()] {
            let read = try api.user(tenant.publicKey, spelling).json()
            XCTAssertEqual(read["user_id"], .string(owner), spelling)
            XCTAssertEqual(read["entitlements"], ["gift", "legacy", "pro"], spelling)
        }
        XCTAssertEqual(try db.query("""
            SELECT user_id FROM app_transactions WHERE project_id = \(tenant.id)::uuid
            UNION ALL SELECT user_id FROM grants WHERE project_id = \(tenant.id)::uuid
            """).map { try $0.decode("user_id", as: String.self) }, [owner, owner])
    }

    /// Turning `require_match` on rewrites the project's stored UUID user ids to the canonical form in the same
    /// transaction: a customer bound as `UUID().uuidString` before keeps their purchase and grant under both
    /// spellings, and is never two holders of it.
    func testSwitchingToRequireMatchCanonicalizesStoredUserIds() throws {
        let (tenant, _) = try tenant()
        let owner = UUID().uuidString.lowercased()
        let payload = try heldPurchase(tenant, holder: owner.uppercased())
        let grant = try api.client.post("/v1/admin/projects/\(tenant.id)/users/\(owner.uppercased())/grants",
                                        json: ["entitlement": "gift", "reason": "support"], headers: E2E.admin)
        XCTAssertEqual(grant.status, 201, grant.description)
        XCTAssertEqual(try holders(tenant), ["\(owner.uppercased()):true"])

        let patched = try api.client.send("PATCH", "/v1/admin/projects/\(tenant.id)",
                                          json: ["app_account_token_policy": "require_match"], headers: E2E.admin)
        XCTAssertEqual(patched.status, 200, patched.description)
        XCTAssertEqual(try holders(tenant), ["\(owner.uppercased()):false", "\(owner):true"].sorted())
        for spelling in [owner, owner.uppercased()] {
            XCTAssertEqual(try api.user(tenant.publicKey, spelling).json()["entitlements"], ["gift", "pro"], spelling)
        }
        // Posting again under either spelling is the holder's own restore: nothing moves.
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try payload.mint(), user: owner.uppercased()).status, 201)
        XCTAssertEqual(try holders(tenant), ["\(owner.uppercased()):false", "\(owner):true"].sorted())
    }

    // MARK: - Errors (nothing written)

    func testUnknownIdIs404InEveryAllowedEnvironment() throws {
        let (tenant, _) = try tenant()
        let id = E2E.uniqueId()
        let r = try lookup(tenant, id)
        assertError(r, 404, "TRANSACTION_NOT_FOUND", error: "Apple does not know this transaction id.")
        XCTAssertEqual(try requests(for: id).map(\.environment), [.production, .sandbox])
        XCTAssertEqual(try rows(tenant), [])
    }

    func testCredentialsAppleRefusesAre502AuthFailed() throws {
        let (tenant, _) = try tenant()
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        try apple.setTransaction(payload.transactionId, signed: try payload.mint(), environment: .sandbox)
        try apple.expect(key: try FakeAppleServer.Key.generate(keyId: "LOOKUP0001"), bundleId: tenant.bundleId)   // another key
        let r = try lookup(tenant, payload.transactionId)
        assertError(r, 502, "APP_STORE_AUTH_FAILED", error: "Apple refused the project's App Store credentials.")
        let suggestion = try r.json()["suggestion"]?.stringValue ?? ""
        for hint in ["Users and Access", "Integrations", "In-App Purchase", "Issuer ID", "Key ID", "bundle_id"] {
            XCTAssertTrue(suggestion.contains(hint), "\(hint) missing from: \(suggestion)")
        }
        XCTAssertEqual(try requests(for: payload.transactionId).map(\.jwtProblem), ["signature does not verify"])
        XCTAssertEqual(try rows(tenant), [])
        // One log line, Apple's status, no token.
        let line = try XCTUnwrap(try server.stderr.split(separator: "\n").last { $0.contains("APP_STORE") || $0.contains("unauthorized") })
        XCTAssertTrue(line.contains("\"status\":502"), String(line))
        XCTAssertFalse(line.contains("Bearer") || line.contains("eyJ"), String(line))
    }

    func testApplePersistently500Is503WithRetryAfterAndWritesNothing() throws {
        let (tenant, _) = try tenant()
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        try apple.setTransaction(payload.transactionId, signed: try payload.mint(), environment: .production)
        try apple.inject(.serverError(), on: .transactionInfo, times: nil)
        let r = try lookup(tenant, payload.transactionId)
        assertError(r, 503, "APPLE_UNAVAILABLE", suggestion: "Retry after the delay in Retry-After. This says nothing about the purchase.")
        XCTAssertEqual(r.header("Retry-After"), "30")
        XCTAssertEqual(try requests(for: payload.transactionId).count, 3)   // the bounded attempts, Production only
        XCTAssertEqual(try rows(tenant), [])
    }

    func testNoCredentialsIs400() throws {
        let (tenant, _) = try tenant(credentials: false)
        let id = E2E.uniqueId()
        let r = try lookup(tenant, id)
        assertError(r, 400, "APP_STORE_CREDENTIALS_MISSING", error: "The project has no App Store Server API credentials.")
        XCTAssertTrue(try r.json()["suggestion"]?.stringValue?.contains("app-store-credentials") ?? false)
        XCTAssertEqual(try requests(for: id).count, 0)
        XCTAssertEqual(try rows(tenant), [])
    }

    func testAForgedAnswerFromAppleIs400VerificationFailedAndWritesNothing() throws {
        let (tenant, _) = try tenant()
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.environment = "Production"
        try apple.setTransaction(payload.transactionId, signed: try FakeAppleServer.forge(payload.json.serializedString()),
                                 environment: .production)
        let r = try lookup(tenant, payload.transactionId)
        assertError(r, 400, "JWS_VERIFICATION_FAILED")
        XCTAssertEqual(try rows(tenant), [])
    }

    func testAnAnswerAboutAnotherTransactionIs502AndWritesNothing() throws {
        let (tenant, _) = try tenant()
        var other = TransactionPayload(bundleId: tenant.bundleId)
        other.environment = "Production"
        let asked = E2E.uniqueId()
        try apple.setTransaction(asked, signed: try other.mint(), environment: .production)
        assertError(try lookup(tenant, asked), 502, "APPLE_INVALID_RESPONSE")
        XCTAssertEqual(try rows(tenant), [])
    }

    func testExactlyOneOfTransactionIdAndSignedTransactionInfo() throws {
        let (tenant, _) = try tenant()
        let both = try api.client.post("/v1/receipts/\(tenant.publicKey)",
                                       json: ["transaction_id": "1", "signed_transaction_info": "a.b.c"])
        let message = "Provide exactly one of signed_transaction_info, transaction_id and receipt_data"
        XCTAssertEqual(try both.errorFields(), [
            "error": "Validation error", "code": "VALIDATION_ERROR",
            "suggestion": "Send exactly one of signed_transaction_info (the StoreKit 2 JWS), transaction_id (Bouncer asks Apple for it) and receipt_data (the StoreKit 1 app receipt, base64). Optional: user_id, device_id.",
            "details": [["path": ["signed_transaction_info"], "message": .string(message)],
                        ["path": ["transaction_id"], "message": .string(message)]],
        ])
        let notDigits = try lookup(tenant, "12ab")
        XCTAssertEqual(notDigits.status, 400)
        XCTAssertEqual(try notDigits.json()["details"], [["path": ["transaction_id"], "message": "Must be an App Store transaction id (digits only)"]])
        XCTAssertEqual(try rows(tenant), [])
    }

    // MARK: - Configuration

    func testBadAppleAPISettingsStopServeAtStartUp() throws {
        let notPEM = NSTemporaryDirectory() + "bouncer-not-pem-\(getpid()).txt"
        try "hello".write(toFile: notPEM, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: notPEM) }
        let cases: [([String: String?], String)] = [
            (["BOUNCER_APPLE_API_CA_FILE": "/nonexistent/ca.pem"],
             #"BOUNCER_APPLE_API_CA_FILE="/nonexistent/ca.pem": cannot read the file"#),
            (["BOUNCER_APPLE_API_CA_FILE": notPEM], "is not a PEM file of certificates"),
            (["BOUNCER_APPLE_API_PRODUCTION_URL": "http://api.example.com"],
             "BOUNCER_APPLE_API_PRODUCTION_URL=\"http://api.example.com\": must be an https:// URL"),
            (["BOUNCER_APPLE_API_SANDBOX_URL": "https://user:pw@example.com"], "BOUNCER_APPLE_API_SANDBOX_URL="),
        ]
        let db = try db
        for (overrides, message) in cases {
            let run = try CLIRun.run(["serve"], environment: BouncerProcess.environment(databaseURL: db.url, overrides: overrides))
            XCTAssertEqual(run.status, 2, run.stderr)
            XCTAssertTrue(run.stderr.contains(message), run.stderr)
        }
    }
}
