import Foundation
import JSON
import Synchronization
import TestSupport
import XCTest

/// Entitlement tokens over the real `bouncer` process and PostgreSQL: issued in the receipt's 201 and by the secret-key
/// route, every one verified against `GET /.well-known/jwks.json` by Python's `cryptography`
/// (`Tests/Fixtures/verify-entitlement-token.py`), an implementation independent of ours; claims asserted exactly.
final class EntitlementTokensE2ETests: XCTestCase {
    typealias Tools = AppStoreCredentialsE2ETests
    static let issuer = "https://bouncer.e2e.test"
    static let verifier = TestPaths.repoRoot.appendingPathComponent("Tests/Fixtures/verify-entitlement-token.py")

    // MARK: Helpers

    /// Runs the Python verifier on `token` with `jwks` (the body of the JWKS route); its exit status and output.
    static func pythonVerify(_ token: String, jwks: String, in dir: URL) throws -> (status: Int32, output: String) {
        let name = UUID().uuidString
        let jwksURL = dir.appendingPathComponent(name + ".jwks.json"), tokenURL = dir.appendingPathComponent(name + ".jwt")
        try Data(jwks.utf8).write(to: jwksURL)
        try Data(token.utf8).write(to: tokenURL)
        let r = try Tools.tool("/usr/bin/env", ["python3", verifier.path, jwksURL.path, tokenURL.path])
        return (r.status, String(decoding: r.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                    + r.stderr)
    }

    static func header(ofJWS jws: String) throws -> JSONValue {
        let first = try XCTUnwrap(jws.split(separator: ".").first)
        return try JSONParser.parse(try XCTUnwrap(OfferSignaturesE2ETests.base64URLDecode(first)))
    }

    static func entitlement(_ id: String, _ end: Int64) -> JSONValue {
        .object(JSONObject([("id", .string(id)), ("expires_at", JSONValue(end))]))
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970.rounded(.down)) }

    func tokenPath(_ tenant: Tenant, _ user: String) -> String { "/v1/subscriptions/\(tenant.publicKey)/\(user)/token" }

    func bearer(_ secret: String) -> [String: String] { ["Authorization": "Bearer \(secret)"] }

    func serverEnvironment(_ key: String?) -> [String: String?] {
        ["BOUNCER_ENCRYPTION_KEY": key, "BOUNCER_TOKEN_ISSUER": Self.issuer]
    }

    func tokenProject(_ api: API, ttl: Int = 600) throws -> Tenant {
        let tenant = try api.createProject(extra: [("entitlement_tokens", true),
                                                   ("entitlement_token_ttl_seconds", JSONValue(ttl))])
        XCTAssertEqual(tenant.created["entitlement_tokens"], true)
        XCTAssertEqual(tenant.created["entitlement_token_ttl_seconds"], JSONValue(ttl))
        try api.mapProduct(tenant, "com.e2e.pro.monthly", ["pro"])
        try api.mapProduct(tenant, "com.e2e.basic.monthly", ["basic"])
        return tenant
    }

    // MARK: Tests

    func testTokensFromReceiptAndBackendVerifyWithTheJWKSAndClaimsAreExact() throws {
        let dir = try Tools.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (db, server, api) = try ownServer(label: "tokens", overrides: serverEnvironment(try Tools.encryptionKey(in: dir).base64))
        defer { server.stopAndAssertCleanExit() }
        let tenant = try tokenProject(api)
        var seen: [String] = []

        // The JWKS: one P-256 key, public and cacheable.
        let jwks = try server.client.get("/.well-known/jwks.json")
        XCTAssertEqual(jwks.status, 200, jwks.description)
        XCTAssertEqual(jwks.header("Cache-Control"), "public, max-age=300")
        let keys = try XCTUnwrap(try jwks.json()["keys"]?.arrayValue)
        XCTAssertEqual(keys.count, 1, jwks.text)
        let kid = try XCTUnwrap(keys.first?["kid"]?.stringValue)
        XCTAssertEqual(keys.first?.objectValue?.keys, ["kty", "crv", "kid", "x", "y", "use", "alg"])
        XCTAssertEqual(keys.first?["kty"], "EC")
        XCTAssertEqual(keys.first?["crv"], "P-256")
        XCTAssertEqual(keys.first?["alg"], "ES256")
        XCTAssertEqual(keys.first?["use"], "sig")
        XCTAssertEqual(keys.first?["x"]?.stringValue?.utf8.count, 43)
        XCTAssertEqual(try db.query("SELECT kid FROM signing_keys WHERE retired_at IS NULL").map {
            try $0.decode("kid", as: String.self)
        }, [kid])
        let sealed = try XCTUnwrap(try db.query("SELECT sealed_private_key FROM signing_keys").first?
            .decode("sealed_private_key", as: [UInt8].self))
        XCTAssertFalse(String(decoding: sealed, as: UTF8.self).contains("PRIVATE KEY"), "stored sealed, never in clear")

        // A receipt with a user: the 201 carries a token of what the posted purchase grants that user now.
        let user = "user-\(E2E.uniqueId())"
        var pro = TransactionPayload(bundleId: tenant.bundleId)
        pro.expiresDate = E2E.ms(30 * 86_400)
        let before = Self.now()
        let posted = try server.client.post("/v1/receipts/\(tenant.publicKey)", json: E2E.receiptBody(try pro.mint(), user: user))
        let after = Self.now()
        seen.append(posted.text)
        XCTAssertEqual(posted.status, 201, posted.description)
        let receiptToken = try XCTUnwrap(try posted.json()["entitlement_token"]?.stringValue, posted.text)
        XCTAssertEqual(try posted.json().objectValue?.keys.last, "entitlement_token")
        XCTAssertEqual(try Self.header(ofJWS: receiptToken), ["alg": "ES256", "kid": .string(kid), "typ": "JWT"])
        let verified = try Self.pythonVerify(receiptToken, jwks: jwks.text, in: dir)
        XCTAssertEqual(verified.status, 0, verified.output)
        XCTAssertEqual(verified.output, "verified \(kid)")
        var claims = try E2E.payload(ofJWS: receiptToken)
        var iat = try XCTUnwrap(claims["iat"]?.int64Value)
        XCTAssertTrue(before...after ~= iat, "\(iat)")
        let proEnd = (pro.expiresDate ?? 0) / 1000
        XCTAssertEqual(claims, .object(JSONObject([
            ("iss", .string(Self.issuer)), ("sub", .string(user)), ("aud", .string(tenant.id)), ("iat", JSONValue(iat)),
            ("exp", JSONValue(iat + 600)),
            ("entitlements", .array([Self.entitlement("pro", proEnd)])),
        ])), "exp capped by the TTL")

        // The check can fail: a changed payload (another user) under the same signature.
        let parts = receiptToken.split(separator: ".")
        let forgedPayload = CompactBase64.url(Array(#"{"sub":"someone-else"}"#.utf8))
        let forged = "\(parts[0]).\(forgedPayload).\(parts[2])"
        let refused = try Self.pythonVerify(forged, jwks: jwks.text, in: dir)
        XCTAssertEqual(refused.status, 1, refused.output)

        // A second purchase ending in 2 minutes: exp is capped by the earliest entitlement end, not the TTL.
        var basic = TransactionPayload(bundleId: tenant.bundleId)
        basic.productId = "com.e2e.basic.monthly"
        basic.expiresDate = E2E.ms(120)
        let second = try server.client.post("/v1/receipts/\(tenant.publicKey)", json: E2E.receiptBody(try basic.mint(), user: user))
        XCTAssertEqual(second.status, 201, second.description)
        let basicEnd = (basic.expiresDate ?? 0) / 1000

        // The backend route: secret key, 200 {token, expires_at}.
        let fetched = try server.client.get(tokenPath(tenant, user), headers: bearer(tenant.secretKey))
        seen.append(fetched.text)
        XCTAssertEqual(fetched.status, 200, fetched.description)
        XCTAssertEqual(fetched.header("Cache-Control"), "no-store")
        XCTAssertEqual(try fetched.json().objectValue?.keys, ["token", "expires_at"])
        let token = try XCTUnwrap(try fetched.json()["token"]?.stringValue)
        XCTAssertEqual(try Self.pythonVerify(token, jwks: jwks.text, in: dir).status, 0)
        claims = try E2E.payload(ofJWS: token)
        iat = try XCTUnwrap(claims["iat"]?.int64Value)
        XCTAssertEqual(claims, .object(JSONObject([
            ("iss", .string(Self.issuer)), ("sub", .string(user)), ("aud", .string(tenant.id)), ("iat", JSONValue(iat)),
            ("exp", JSONValue(basicEnd)),
            ("entitlements", .array([Self.entitlement("basic", basicEnd), Self.entitlement("pro", proEnd)])),
        ])))
        XCTAssertEqual(try fetched.json()["expires_at"]?.stringValue, E2E.iso(basicEnd * 1000))

        // A user with nothing: a verified empty list for the whole TTL.
        let nobody = try server.client.get(tokenPath(tenant, "nobody"), headers: bearer(tenant.secretKey))
        XCTAssertEqual(nobody.status, 200, nobody.description)
        let empty = try E2E.payload(ofJWS: try XCTUnwrap(try nobody.json()["token"]?.stringValue))
        XCTAssertEqual(empty["entitlements"], [])
        XCTAssertEqual(empty["sub"], "nobody")
        XCTAssertEqual(empty["exp"]?.int64Value, (empty["iat"]?.int64Value ?? 0) + 600)

        // Without user_id no token is issued: nobody to issue it for.
        let anonymous = try server.client.post("/v1/receipts/\(tenant.publicKey)",
                                               json: E2E.receiptBody(try TransactionPayload(bundleId: tenant.bundleId).mint()))
        XCTAssertEqual(anonymous.status, 201, anonymous.description)
        XCTAssertNil(try anonymous.json()["entitlement_token"], anonymous.text)

        // Secrets stay out of the log.
        let privatePEM = server.stderr
        XCTAssertFalse(privatePEM.contains("PRIVATE KEY"))
        XCTAssertFalse(privatePEM.contains(token), "tokens are not logged")
        XCTAssertTrue(privatePEM.contains("tokens sign with key \(kid)"), privatePEM)
        _ = seen
    }

    /// Issue 21: the receipt's token proves only what the request proved. Posting one's own (expired) purchase with
    /// a victim's `user_id` must not yield a signed list of the victim's entitlements; a second, active purchase's
    /// token lists that purchase alone. The user's whole set comes from the secret-key route.
    func testAReceiptTokenNamesOnlyThePostedPurchase() throws {
        let dir = try Tools.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (db, server, api) = try ownServer(label: "tokens_scope", overrides: serverEnvironment(try Tools.encryptionKey(in: dir).base64))
        defer { server.stopAndAssertCleanExit() }
        let tenant = try tokenProject(api)
        let victim = "victim-\(E2E.uniqueId())"
        var pro = TransactionPayload(bundleId: tenant.bundleId)
        pro.expiresDate = E2E.ms(30 * 86_400)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try pro.mint(), user: victim).status, 201)
        let proEnd = (pro.expiresDate ?? 0) / 1000
        func victimRows() throws -> [String] {
            try db.query("""
                SELECT user_id || ' ' || original_transaction_id || ' ' || (revoked_at IS NULL)::text AS r
                FROM subscriptions WHERE project_id = \(tenant.id)::uuid AND user_id = \(victim)
                """).map { try $0.decode("r", as: String.self) }
        }
        let before = try victimRows()

        // The attacker's own purchase, expired: a verified "nothing" for the victim, not the victim's list.
        var expired = TransactionPayload(bundleId: tenant.bundleId)
        expired.productId = "com.e2e.basic.monthly"
        expired.purchaseDate = E2E.ms(-40 * 86_400)
        expired.expiresDate = E2E.ms(-10 * 86_400)
        let attack = try api.postReceipt(tenant.publicKey, try expired.mint(), user: victim)
        XCTAssertEqual(attack.status, 201, attack.description)
        let attackClaims = try E2E.payload(ofJWS: try XCTUnwrap(try attack.json()["entitlement_token"]?.stringValue))
        XCTAssertEqual(attackClaims["sub"], .string(victim))
        XCTAssertEqual(attackClaims["entitlements"], [], attack.text)
        XCTAssertEqual(try attack.json()["entitlements"], [], attack.text)
        XCTAssertEqual(try victimRows().filter { $0.contains(pro.originalTransactionId) }, before)

        // An active purchase: its own entitlement, ending when it does; not the user's other purchases.
        var basic = TransactionPayload(bundleId: tenant.bundleId)
        basic.productId = "com.e2e.basic.monthly"
        basic.expiresDate = E2E.ms(120)   // before the TTL ends: exp is the purchase's end
        let second = try api.postReceipt(tenant.publicKey, try basic.mint(), user: victim)
        XCTAssertEqual(second.status, 201, second.description)
        let basicEnd = (basic.expiresDate ?? 0) / 1000
        let claims = try E2E.payload(ofJWS: try XCTUnwrap(try second.json()["entitlement_token"]?.stringValue))
        XCTAssertEqual(claims["entitlements"], .array([Self.entitlement("basic", basicEnd)]), second.text)
        XCTAssertEqual(claims["exp"], JSONValue(basicEnd))

        // The backend's route still names the whole set.
        let whole = try server.client.get(tokenPath(tenant, victim), headers: bearer(tenant.secretKey))
        XCTAssertEqual(whole.status, 200, whole.description)
        XCTAssertEqual(try E2E.payload(ofJWS: try XCTUnwrap(try whole.json()["token"]?.stringValue))["entitlements"],
                       .array([Self.entitlement("basic", basicEnd), Self.entitlement("pro", proEnd)]))
    }

    func testRotationKeepsThePreviousKeyPublishedAndOldTokensVerify() throws {
        let dir = try Tools.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = try Tools.encryptionKey(in: dir).base64
        let db = try E2EDatabase(label: "tokens_rotate")
        // Two instances starting at once make one key between them.
        let started = Mutex<[Int: Result<BouncerProcess, any Error>]>([:])
        let environment = serverEnvironment(key)
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let result = Result { try BouncerProcess(databaseURL: db.url, overrides: environment) }
            started.withLock { $0[i] = result }
        }
        let servers = try started.withLock { results in try [0, 1].map { try XCTUnwrap(results[$0]).get() } }
        defer { servers.forEach { $0.stopAndAssertCleanExit() } }
        XCTAssertEqual(try db.count("signing_keys"), 1)
        let server = servers[0]
        let api = API(client: server.client)
        let tenant = try tokenProject(api)
        let user = "user-\(E2E.uniqueId())"
        let posted = try server.client.post("/v1/receipts/\(tenant.publicKey)",
                                            json: E2E.receiptBody(try TransactionPayload(bundleId: tenant.bundleId).mint(), user: user))
        XCTAssertEqual(posted.status, 201, posted.description)
        let old = try XCTUnwrap(try posted.json()["entitlement_token"]?.stringValue)
        let oldKid = try XCTUnwrap(try Self.header(ofJWS: old)["kid"]?.stringValue)

        let rotate = try CLIRun.run(["signing-key", "rotate"], environment: BouncerProcess.environment(
            databaseURL: db.url, overrides: ["BOUNCER_ENCRYPTION_KEY": key]))
        XCTAssertEqual(rotate.status, 0, rotate.stderr)
        let rotated = try JSONParser.parse(Array(rotate.stdout.utf8))
        let newKid = try XCTUnwrap(rotated["kid"]?.stringValue)
        XCTAssertEqual(rotated, ["kid": .string(newKid), "previous_kid": .string(oldKid)])
        XCTAssertNotEqual(newKid, oldKid)

        // Both instances publish current then previous, and sign with the new key at once.
        for instance in servers {
            let jwks = try instance.client.get("/.well-known/jwks.json")
            XCTAssertEqual(try jwks.json()["keys"]?.arrayValue?.compactMap { $0["kid"]?.stringValue }, [newKid, oldKid])
            let fresh = try instance.client.get(tokenPath(tenant, user), headers: bearer(tenant.secretKey))
            XCTAssertEqual(fresh.status, 200, fresh.description)
            let token = try XCTUnwrap(try fresh.json()["token"]?.stringValue)
            XCTAssertEqual(try Self.header(ofJWS: token)["kid"]?.stringValue, newKid)
            XCTAssertEqual(try Self.pythonVerify(token, jwks: jwks.text, in: dir).output, "verified \(newKid)")
            XCTAssertEqual(try Self.pythonVerify(old, jwks: jwks.text, in: dir).output, "verified \(oldKid)",
                           "a token issued before the rotation keeps verifying")
        }
        XCTAssertEqual(try db.query("SELECT kid FROM signing_keys WHERE retired_at IS NULL").map {
            try $0.decode("kid", as: String.self)
        }, [newKid])

        // Without the previous key in the JWKS the old token would not verify: the check can fail.
        let onlyNew = #"{"keys":[]}"#
        XCTAssertEqual(try Self.pythonVerify(old, jwks: onlyNew, in: dir).status, 3)
    }

    func testRefusalsAreExact() throws {
        let dir = try Tools.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (_, server, api) = try ownServer(label: "tokens_refusals", overrides: serverEnvironment(try Tools.encryptionKey(in: dir).base64))
        defer { server.stopAndAssertCleanExit() }
        let tenant = try tokenProject(api)
        let path = tokenPath(tenant, "u1")

        // No secret key, a wrong one, a public key as bearer.
        let none = try server.client.get(path)
        XCTAssertEqual(none.status, 401, none.description)
        XCTAssertEqual(try none.json()["code"], "AUTH_SECRET_KEY_REQUIRED")
        XCTAssertEqual(try none.json()["suggestion"]?.stringValue?.hasPrefix("Entitlement tokens are issued to backends"), true)
        let wrong = try server.client.get(path, headers: bearer("sk_" + String(repeating: "0", count: 64)))
        XCTAssertEqual(wrong.status, 401, wrong.description)
        XCTAssertEqual(try wrong.json()["code"], "AUTH_INVALID_SECRET_KEY")
        XCTAssertEqual(try wrong.json()["error"], "Invalid secret key.")
        XCTAssertFalse(try wrong.json()["suggestion"]?.stringValue?.isEmpty ?? true)
        let unknownProject = try server.client.get("/v1/subscriptions/pk_\(String(repeating: "0", count: 32))/u1/token",
                                                   headers: bearer(tenant.secretKey))
        XCTAssertEqual(unknownProject.status, 401)
        XCTAssertEqual(try unknownProject.json()["code"], "AUTH_INVALID_PUBLIC_KEY")

        // Disabled project: 403 with the way to enable it; the receipt's 201 has no token.
        let disabled = try api.createProject()
        try api.mapProduct(disabled)
        let off = try server.client.get(tokenPath(disabled, "u1"), headers: bearer(disabled.secretKey))
        XCTAssertEqual(off.status, 403, off.description)
        let offBody = try off.json()
        XCTAssertEqual(offBody["code"], "ENTITLEMENT_TOKENS_DISABLED")
        XCTAssertEqual(offBody["error"], "Entitlement tokens are disabled for this project.")
        XCTAssertEqual(offBody["suggestion"]?.stringValue,
                       "An admin can enable them: PATCH /v1/admin/projects/{id} with {\"entitlement_tokens\": true} "
                           + "(or `bouncer project update PROJECT_ID --entitlement-tokens on`).")
        XCTAssertNil(offBody["details"])
        XCTAssertEqual(offBody["request_id"]?.stringValue, off.header("X-Request-Id"))
        let plain = try server.client.post("/v1/receipts/\(disabled.publicKey)",
                                           json: E2E.receiptBody(try TransactionPayload(bundleId: disabled.bundleId).mint(), user: "u1"))
        XCTAssertEqual(plain.status, 201)
        XCTAssertNil(try plain.json()["entitlement_token"])

        // Enabling through PATCH works at once; TTL bounds are checked.
        let enable = try server.client.send("PATCH", "/v1/admin/projects/\(disabled.id)",
                                            json: ["entitlement_tokens": true, "entitlement_token_ttl_seconds": 30],
                                            headers: E2E.admin)
        XCTAssertEqual(enable.status, 200, enable.description)
        XCTAssertEqual(try enable.json()["entitlement_token_ttl_seconds"], 30)
        XCTAssertTrue(try E2E.eventually {
            try server.client.get(tokenPath(disabled, "u1"), headers: bearer(disabled.secretKey)).status == 200
        })
        for (ttl, message) in [(29, "Number must be greater than or equal to 30"),
                               (86_401, "Number must be less than or equal to 86400")] {
            let bad = try server.client.send("PATCH", "/v1/admin/projects/\(disabled.id)",
                                             json: ["entitlement_token_ttl_seconds": JSONValue(ttl)], headers: E2E.admin)
            XCTAssertEqual(bad.status, 400, bad.description)
            XCTAssertEqual(try bad.json()["code"], "VALIDATION_ERROR")
            XCTAssertEqual(try bad.json()["details"],
                           [["path": ["entitlement_token_ttl_seconds"], "message": .string(message)]])
        }
    }

    func testWithoutAnEncryptionKeyTokensAreRefusedAndTheJWKSIsEmpty() throws {
        let (db, server, api) = try ownServer(label: "tokens_nokey", overrides: serverEnvironment(nil))
        defer { server.stopAndAssertCleanExit() }
        let tenant = try tokenProject(api)
        let jwks = try server.client.get("/.well-known/jwks.json")
        XCTAssertEqual(jwks.status, 200, jwks.description)
        XCTAssertEqual(jwks.text, #"{"keys":[]}"#)
        let refused = try server.client.get(tokenPath(tenant, "u1"), headers: bearer(tenant.secretKey))
        XCTAssertEqual(refused.status, 409, refused.description)
        let body = try refused.json()
        XCTAssertEqual(body["code"], "ENCRYPTION_KEY_MISSING")
        XCTAssertEqual(body["error"], "Entitlement tokens cannot be signed: the server has no encryption key.")
        XCTAssertEqual(body["suggestion"]?.stringValue?.hasPrefix("Set BOUNCER_ENCRYPTION_KEY on the server"), true)
        // The purchase is recorded either way: 201 without a token.
        let posted = try server.client.post("/v1/receipts/\(tenant.publicKey)",
                                            json: E2E.receiptBody(try TransactionPayload(bundleId: tenant.bundleId).mint(), user: "u1"))
        XCTAssertEqual(posted.status, 201, posted.description)
        XCTAssertNil(try posted.json()["entitlement_token"])
        XCTAssertEqual(try db.count("signing_keys"), 0)
        XCTAssertTrue(server.stderr.contains("BOUNCER_ENCRYPTION_KEY is unset: entitlement tokens are unavailable"))
    }
}

/// Base64url without padding, for forging test tokens.
enum CompactBase64 {
    static func url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
