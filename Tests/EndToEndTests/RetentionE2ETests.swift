import Foundation
import JSON
import XCTest

/// Retention Messaging over the real `bouncer serve` and PostgreSQL: Apple's real-time requests minted with the test
/// PKI (`sign-jws`), the project's rules, the exact RealtimeResponseBody of each action, the promotional offer's V2
/// JWS checked by `openssl`, every refusal (stale, replayed, wrong app, wrong environment, forged chain), the
/// decisions' rows and timeline, and simulate's lack of side effects.
final class RetentionE2ETests: XCTestCase {
    typealias Tools = AppStoreCredentialsE2ETests
    static let appAppleId: Int64 = 1_234_567_890
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyId = "2X9R4HXF34"
    static let m1 = "11111111-1111-4111-8111-111111111111", m2 = "22222222-2222-4222-8222-222222222222"
    static let m3 = "33333333-3333-4333-8333-333333333333", m4 = "44444444-4444-4444-8444-444444444444"

    struct Fixture {
        var server: BouncerProcess
        var db: E2EDatabase
        var api: API
        var tenant: Tenant
        var otid: String
        var user: String
        var publicKeyFile: URL
        var dir: URL
    }

    func fixture(label: String) throws -> Fixture {
        let dir = try Tools.scratch()
        let p8 = try Tools.generate("AuthKey_\(Self.keyId).p8", in: dir)
        let publicKey = try OfferSignaturesE2ETests.publicKey(of: p8, in: dir)
        let (db, server, api) = try ownServer(label: label, overrides: [
            "BOUNCER_ENCRYPTION_KEY": try Tools.encryptionKey(in: dir).base64,
        ])
        let tenant = try api.createProject(extra: [("app_apple_id", JSONValue(Self.appAppleId)),
                                                   ("environments", ["Production", "Sandbox"])])
        try api.mapProduct(tenant, "com.e2e.pro.monthly", ["pro"])
        try api.mapProduct(tenant, "com.e2e.pro.yearly", ["pro"])
        let stored = try server.client.send(
            "PUT", "/v1/admin/projects/\(tenant.id)/app-store-credentials",
            json: ["issuer_id": .string(Self.issuerId), "key_id": .string(Self.keyId), "private_key": .string(p8.pem)],
            headers: E2E.admin)
        XCTAssertEqual(stored.status, 200, stored.description)
        let user = "user-\(E2E.uniqueId())"
        let t = TransactionPayload(bundleId: tenant.bundleId)
        let posted = try api.postReceipt(tenant.publicKey, try t.mint(), user: user)
        XCTAssertEqual(posted.status, 201, posted.description)
        return Fixture(server: server, db: db, api: api, tenant: tenant, otid: t.originalTransactionId, user: user,
                       publicKeyFile: publicKey, dir: dir)
    }

    /// Apple's DecodedRealtimeRequestBody.
    static func payload(otid: String, product: String = "com.e2e.pro.monthly", locale: String = "en-US",
                        id: String = UUID().uuidString.lowercased(), signed: Int64 = E2E.ms(-1),
                        environment: String = "Sandbox", appAppleId: Int64? = appAppleId) -> JSONValue {
        var pairs: [(String, JSONValue)] = [
            ("originalTransactionId", .string(otid)), ("productId", .string(product)),
            ("userLocale", .string(locale)), ("requestIdentifier", .string(id)), ("signedDate", JSONValue(signed)),
            ("environment", .string(environment)),
        ]
        if let appAppleId { pairs.append(("appAppleId", JSONValue(appAppleId))) }
        return .object(JSONObject(pairs))
    }

    func post(_ f: Fixture, _ payload: JSONValue, key: String? = nil, x5c: [String] = []) throws -> HTTPResponse {
        let jws = try E2E.mint(payload, x5c: x5c)
        return try f.server.client.post("/v1/retention/\(key ?? f.tenant.publicKey)",
                                        json: ["signedPayload": .string(jws)])
    }

    func putRules(_ f: Fixture, _ rules: JSONValue) throws -> HTTPResponse {
        try f.server.client.send("PUT", "/v1/admin/projects/\(f.tenant.id)/retention/rules",
                                 json: ["rules": rules], headers: E2E.admin)
    }

    static let rules: JSONValue = [
        ["name": "french offer", "when": ["locale_prefixes": ["fr"]],
         "action": ["message_id": .string(m1), "promotional_offer_id": "RETAIN50"]],
        ["name": "new monthly", "when": ["product_ids": ["com.e2e.pro.monthly"], "max_tenure_days": 5],
         "action": ["message_id": .string(m2), "alternate_product_id": "com.e2e.pro.yearly"]],
        ["name": "loyal", "when": ["min_renewals": 3], "action": ["message_id": .string(m3)]],
        ["name": "everyone else", "action": ["message_id": .string(m4)]],
    ]

    func testEachActionIsApplesResponseAndEveryDecisionIsRecordedAndInTheTimeline() throws {
        let f = try fixture(label: "retention_actions")
        defer { f.server.stop(); try? FileManager.default.removeItem(at: f.dir) }
        let put = try putRules(f, Self.rules)
        XCTAssertEqual(put.status, 200, put.description)
        XCTAssertEqual(try put.json()["rules"]?.arrayValue?.count, 4)
        let got = try f.server.client.get("/v1/admin/projects/\(f.tenant.id)/retention/rules", headers: E2E.admin)
        XCTAssertEqual(got.status, 200, got.description)
        XCTAssertEqual(try got.json(), try put.json())
        XCTAssertEqual(try got.json()["rules"]?[1], [
            "name": "new monthly", "when": ["product_ids": ["com.e2e.pro.monthly"], "max_tenure_days": 5],
            "action": ["message_id": .string(Self.m2), "alternate_product_id": "com.e2e.pro.yearly"],
        ])

        // A new monthly subscriber in English: the switch-plan message, exactly Apple's shape.
        let alternate = try post(f, Self.payload(otid: f.otid))
        XCTAssertEqual(alternate.status, 200, alternate.description)
        XCTAssertEqual(alternate.text, #"{"alternateProduct":{"messageIdentifier":"\#(Self.m2)","productId":"com.e2e.pro.yearly"}}"#)

        // French: the promotional offer, signed with the project's key as a V2 JWS bound to the transaction.
        let offer = try post(f, Self.payload(otid: f.otid, locale: "fr-FR"))
        XCTAssertEqual(offer.status, 200, offer.description)
        let body = try offer.json()
        XCTAssertEqual(body.objectValue?.keys, ["promotionalOffer"])
        XCTAssertEqual(body["promotionalOffer"]?.objectValue?.keys, ["messageIdentifier", "promotionalOfferSignatureV2"])
        XCTAssertEqual(body["promotionalOffer"]?["messageIdentifier"], .string(Self.m1))
        let jws = try XCTUnwrap(body["promotionalOffer"]?["promotionalOfferSignatureV2"]?.stringValue)
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3)
        let header = try JSONParser.parse(try XCTUnwrap(OfferSignaturesE2ETests.base64URLDecode(parts[0])))
        XCTAssertEqual(header, ["alg": "ES256", "kid": .string(Self.keyId), "typ": "JWT"])
        let claims = try E2E.payload(ofJWS: jws)
        XCTAssertEqual(claims["iss"], .string(Self.issuerId))
        XCTAssertEqual(claims["aud"], "promotional-offer")
        XCTAssertEqual(claims["bid"], .string(f.tenant.bundleId))
        XCTAssertEqual(claims["productId"], "com.e2e.pro.monthly")
        XCTAssertEqual(claims["offerIdentifier"], "RETAIN50")
        XCTAssertEqual(claims["transactionId"], .string(f.otid))
        let signature = try XCTUnwrap(OfferSignaturesE2ETests.base64URLDecode(parts[2]))
        XCTAssertEqual(signature.count, 64)
        XCTAssertTrue(try OfferSignaturesE2ETests.opensslVerifies(
            OfferSignaturesE2ETests.der(fromRaw: signature), over: Array("\(parts[0]).\(parts[1])".utf8),
            publicKey: f.publicKeyFile, in: f.dir), "openssl verifies the offer's JWS with the key's public half")

        // Another product: the last rule's message.
        let message = try post(f, Self.payload(otid: f.otid, product: "com.e2e.pro.yearly"))
        XCTAssertEqual(message.status, 200, message.description)
        XCTAssertEqual(message.text, #"{"message":{"messageIdentifier":"\#(Self.m4)"}}"#)

        // Each decision is one row, and one event of the customer's timeline with its reason.
        XCTAssertEqual(try f.db.count("retention_decisions", project: f.tenant.id), 3)
        let actions = try f.db.query("""
            SELECT action, rule_index, message_id::text AS m FROM retention_decisions
            WHERE project_id = \(f.tenant.id)::uuid ORDER BY decided_at, rule_index
            """).map { "\(try $0.decode("action", as: String.self)):\(try $0.decode("rule_index", as: Int?.self) ?? -1)" }
        XCTAssertEqual(Set(actions), ["alternate_product:1", "promotional_offer:0", "message:3"])
        let timeline = try f.server.client.get(
            "/v1/admin/projects/\(f.tenant.id)/users/\(f.user)/timeline", headers: E2E.admin)
        XCTAssertEqual(timeline.status, 200, timeline.description)
        let events = try timeline.json()["events"]?.arrayValue?.filter { $0["type"] == "retention_decision" } ?? []
        XCTAssertEqual(events.count, 3, timeline.text)
        XCTAssertTrue(events.allSatisfy { $0["source"] == "retention" && $0["transaction_id"] == .string(f.otid) })
        XCTAssertTrue(events.contains {
            $0["summary"]?.stringValue?.contains("Rule 2 \"new monthly\" matched: product in [com.e2e.pro.monthly], "
                + "tenure ≤ 5 days.") == true
        }, timeline.text)

        // Simulate: the decision, its rule and facts; no row written anywhere.
        let before = try ["retention_decisions", "audit_log", "transactions", "purchases"].map { try f.db.count($0) }
        let simulated = try f.server.client.post(
            "/v1/admin/projects/\(f.tenant.id)/retention/simulate",
            json: ["user_id": .string(f.user), "product_id": "com.e2e.pro.monthly", "locale": "fr-CA"],
            headers: E2E.admin)
        XCTAssertEqual(simulated.status, 200, simulated.description)
        XCTAssertEqual(try simulated.json(), [
            "decision": ["action": "promotional_offer", "rule_index": 0, "rule_name": "french offer",
                         "message_id": .string(Self.m1), "promotional_offer_id": "RETAIN50",
                         "reason": "Rule 1 \"french offer\" matched: locale starts with [fr]."],
            "facts": ["original_transaction_id": .string(f.otid), "purchase_known": true, "user_id": .string(f.user),
                      "product_id": "com.e2e.pro.monthly", "locale": "fr-CA", "tenure_days": 0, "renewals": 0,
                      "refunded": false, "in_billing_retry": false, "offers_used": 0],
        ])
        let byOtid = try f.server.client.post(
            "/v1/admin/projects/\(f.tenant.id)/retention/simulate",
            json: ["original_transaction_id": .string(f.otid), "product_id": "com.e2e.pro.yearly", "locale": "de"],
            headers: E2E.admin)
        XCTAssertEqual(byOtid.status, 200, byOtid.description)
        XCTAssertEqual(try byOtid.json()["decision"]?["rule_name"], "everyone else")
        let after = try ["retention_decisions", "audit_log", "transactions", "purchases"].map { try f.db.count($0) }
        XCTAssertEqual(before, after, "simulate writes nothing")

        // Rules are validated as a whole; every problem named.
        let bad = try putRules(f, [
            ["name": "", "when": ["min_tenure_days": -1, "locale_prefixes": []], "action": ["message_id": "nope"]],
            ["name": "both", "action": ["message_id": .string(Self.m1), "alternate_product_id": "a",
                                        "promotional_offer_id": "b"]],
        ])
        XCTAssertEqual(bad.status, 400, bad.description)
        XCTAssertEqual(try bad.json()["code"], "VALIDATION_ERROR")
        XCTAssertEqual(try bad.json()["details"]?.arrayValue?.compactMap { $0["path"] }, [
            ["rules", "0", "name"], ["rules", "0", "when", "locale_prefixes"], ["rules", "0", "action", "message_id"],
            ["rules", "1", "action"],
        ])
        XCTAssertEqual(try f.db.count("retention_rules", project: f.tenant.id), 4, "a refused PUT changes nothing")
        let audit = try f.db.query("""
            SELECT count(*)::int8 AS n FROM audit_log WHERE project_id = \(f.tenant.id)::uuid
              AND action = 'retention.put_rules'
            """).first.map { try $0.decode("n", as: Int64.self) }
        XCTAssertEqual(audit, 1)
    }

    func testRefusedRequestsGetNoOfferAndApplesDefaultMessage() throws {
        let f = try fixture(label: "retention_refusals")
        defer { f.server.stop(); try? FileManager.default.removeItem(at: f.dir) }
        XCTAssertEqual(try putRules(f, Self.rules).status, 200)

        func assertRefused(_ r: HTTPResponse, _ status: Int, _ code: String, _ label: String,
                           file: StaticString = #filePath, line: UInt = #line) throws {
            XCTAssertEqual(r.status, status, "\(label): \(r.description)", file: file, line: line)
            XCTAssertEqual(try r.json()["code"]?.stringValue, code, "\(label): \(r.text)", file: file, line: line)
            XCTAssertNil(try r.json()["promotionalOffer"], label, file: file, line: line)
        }

        // Replayed: the same requestIdentifier a second time.
        let id = UUID().uuidString.lowercased()
        XCTAssertEqual(try post(f, Self.payload(otid: f.otid, locale: "fr-FR", id: id)).status, 200)
        try assertRefused(try post(f, Self.payload(otid: f.otid, locale: "fr-FR", id: id)), 409,
                          "RETENTION_REQUEST_REPLAYED", "replayed")
        // Stale: signed six minutes ago; and one from too far in the future.
        try assertRefused(try post(f, Self.payload(otid: f.otid, locale: "fr-FR", signed: E2E.ms(-360))), 401,
                          "RETENTION_REQUEST_STALE", "stale")
        try assertRefused(try post(f, Self.payload(otid: f.otid, locale: "fr-FR", signed: E2E.ms(120))), 401,
                          "RETENTION_REQUEST_STALE", "from the future")
        // Another app (the payload names its app by appAppleId).
        try assertRefused(try post(f, Self.payload(otid: f.otid, locale: "fr-FR", appAppleId: 42)), 400,
                          "APP_APPLE_ID_MISMATCH", "wrong app")
        // An environment the project does not serve.
        let productionOnly = try f.api.createProject(extra: [("environments", ["Production"])])
        try assertRefused(try post(f, Self.payload(otid: f.otid, locale: "fr-FR"), key: productionOnly.publicKey), 400,
                          "ENVIRONMENT_NOT_ALLOWED", "wrong environment")
        // Production for a project that does not know its app's id: not tied to the app, refused.
        let noAppId = try f.api.createProject(extra: [("environments", ["Production", "Sandbox"])])
        try assertRefused(try post(f, Self.payload(otid: f.otid, environment: "Production"), key: noAppId.publicKey),
                          400, "APP_APPLE_ID_MISMATCH", "production without app_apple_id")
        // Forged: a chain to a root the server does not trust.
        let certs = E2EPaths.untrustedCerts
        try assertRefused(try post(f, Self.payload(otid: f.otid, locale: "fr-FR"), x5c: [
            "untrusted-leaf.pem", "untrusted-intermediate.pem", "untrusted-root.pem",
        ].map { certs.appendingPathComponent($0).path }), 400, "JWS_VERIFICATION_FAILED", "forged")
        // Unknown project, and a body that is not Apple's.
        XCTAssertEqual(try post(f, Self.payload(otid: f.otid), key: "pk_unknown").status, 401)
        let garbage = try f.server.client.post("/v1/retention/\(f.tenant.publicKey)", json: ["signedPayload": "a.b"])
        XCTAssertEqual(garbage.status, 400, garbage.description)
        // An offer the project cannot sign (no App Store credentials): the default message, and the decision says why.
        let unsigned = try f.api.createProject(extra: [("app_apple_id", JSONValue(Self.appAppleId)),
                                                       ("environments", ["Sandbox"])])
        try f.api.mapProduct(unsigned, "com.e2e.pro.monthly", ["pro"])
        let offerRule = try f.server.client.send(
            "PUT", "/v1/admin/projects/\(unsigned.id)/retention/rules", json: ["rules": [
                ["name": "offer", "action": ["message_id": .string(Self.m1), "promotional_offer_id": "RETAIN50"]],
            ]], headers: E2E.admin)
        XCTAssertEqual(offerRule.status, 200, offerRule.description)
        try assertRefused(try post(f, Self.payload(otid: "999"), key: unsigned.publicKey), 400,
                          "APP_STORE_CREDENTIALS_MISSING", "offer without credentials")
        let unsignedReason = try f.db.query("""
            SELECT action || ': ' || reason AS r FROM retention_decisions WHERE project_id = \(unsigned.id)::uuid
            """).map { try $0.decode("r", as: String.self) }
        XCTAssertEqual(unsignedReason, ["default: Rule 1 \"offer\" matched: any subscriber. The offer could not be "
            + "signed (APP_STORE_CREDENTIALS_MISSING): Apple shows the default message."])
        // No rule matches: not a 200, so Apple shows the default message; the decision is still recorded.
        XCTAssertEqual(try putRules(f, [["name": "only yearly", "when": ["product_ids": ["com.e2e.pro.yearly"]],
                                         "action": ["message_id": .string(Self.m3)]]]).status, 200)
        try assertRefused(try post(f, Self.payload(otid: f.otid)), 404, "RETENTION_NO_MATCHING_RULE", "no rule")
        let rows = try f.db.query("""
            SELECT action FROM retention_decisions WHERE project_id = \(f.tenant.id)::uuid ORDER BY decided_at
            """).map { try $0.decode("action", as: String.self) }
        XCTAssertEqual(rows, ["promotional_offer", "default"], "only verified, fresh, first-seen requests are decisions")
    }
}
