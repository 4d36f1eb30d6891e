import Foundation
import JSON
import XCTest

/// `POST /v1/offers/:publicKey/introductory-eligibility` over the real `bouncer` process and PostgreSQL: the
/// decision from stored signed transactions (one introductory offer per subscription group per person, across
/// Apple accounts linked by user id, appAccountToken or appTransactionId), the secret key required, and the JWS
/// checked with `openssl dgst -verify` against the key's public half.
final class IntroductoryOfferE2ETests: XCTestCase {
    typealias Tools = AppStoreCredentialsE2ETests
    typealias Offers = OfferSignaturesE2ETests
    static let monthly = "com.e2e.pro.monthly", yearly = "com.e2e.pro.yearly"

    func path(_ publicKey: String) -> String { "/v1/offers/\(publicKey)/introductory-eligibility" }

    func testDecisionsAcrossLinkedAccountsAreSignedAsAppleDocuments() throws {
        let dir = try Tools.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let p8 = try Tools.generate("AuthKey_2X9R4HXF34.p8", in: dir)
        let publicKey = try Offers.publicKey(of: p8, in: dir)
        let (_, server, api) = try ownServer(label: "intro", overrides: [
            "BOUNCER_ENCRYPTION_KEY": try Tools.encryptionKey(in: dir).base64,
        ])
        let tenant = try api.createProject()
        try api.mapProduct(tenant, Self.monthly)
        try api.mapProduct(tenant, Self.yearly, ["pro", "yearly"])
        let stored = try server.client.send(
            "PUT", "/v1/admin/projects/\(tenant.id)/app-store-credentials",
            json: ["issuer_id": .string(Offers.issuerId), "key_id": .string(Offers.keyId), "private_key": .string(p8.pem)],
            headers: E2E.admin)
        XCTAssertEqual(stored.status, 200, stored.description)
        let backend = ["Authorization": "Bearer \(tenant.secretKey)"]
        func ask(_ user: String, _ product: String = IntroductoryOfferE2ETests.monthly, transaction: String? = nil,
                 headers: [String: String]? = nil) throws -> HTTPResponse {
            var body: [(String, JSONValue)] = [("product_id", .string(product)), ("user_id", .string(user))]
            if let transaction { body.append(("transaction_id", .string(transaction))) }
            return try server.client.post(path(tenant.publicKey), json: .object(JSONObject(body)),
                                          headers: headers ?? backend)
        }
        func decision(_ r: HTTPResponse, file: StaticString = #filePath, line: UInt = #line) throws -> [JSONValue?] {
            XCTAssertEqual(r.status, 200, r.description, file: file, line: line)
            let body = try r.json()
            XCTAssertEqual(body.objectValue?.keys, ["eligible", "reason", "signature"], file: file, line: line)
            return [body["eligible"], body["reason"]]
        }

        // The public key alone proves nothing about a user; a wrong secret key is refused as everywhere.
        assertError(try ask("alice", headers: [:]), 401, "AUTH_SECRET_KEY_REQUIRED", error: "Secret key required.",
                    suggestion: "Introductory offer eligibility is decided for a user: call from your backend with "
                        + "Authorization: Bearer sk_... and pass the signature to the app.")
        assertError(try ask("alice", headers: ["Authorization": "Bearer sk_" + String(repeating: "0", count: 64)]),
                    401, "AUTH_INVALID_SECRET_KEY")

        // Nobody has used anything: eligible, and the JWS is Apple's, verified by openssl.
        let before = Int64(Date().timeIntervalSince1970)
        let fresh = try ask("alice", transaction: "2000000999999999")
        let after = Int64(Date().timeIntervalSince1970)
        XCTAssertEqual(try decision(fresh), [true, "no_introductory_offer_used"])
        let compact = try XCTUnwrap(try fresh.json()["signature"]?.stringValue)
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(try JSONParser.parse(try XCTUnwrap(Offers.base64URLDecode(parts[0]))),
                       ["alg": "ES256", "kid": .string(Offers.keyId), "typ": "JWT"])
        let claims = try E2E.payload(ofJWS: compact)
        let iat = try XCTUnwrap(claims["iat"]?.int64Value)
        XCTAssertTrue(before...after ~= iat, "seconds: \(iat)")
        XCTAssertTrue(Offers.isLowercaseUUID(claims["nonce"]), compact)
        XCTAssertEqual(claims, .object(JSONObject([
            ("iss", .string(Offers.issuerId)), ("iat", JSONValue(iat)), ("aud", "introductory-offer-eligibility"),
            ("bid", .string(tenant.bundleId)), ("nonce", claims["nonce"] ?? .null), ("productId", .string(Self.monthly)),
            ("allowIntroductoryOffer", true), ("transactionId", "2000000999999999"),
        ])))
        let raw = try XCTUnwrap(Offers.base64URLDecode(parts[2]))
        XCTAssertEqual(raw.count, 64, "JOSE r‖s")
        XCTAssertTrue(try Offers.opensslVerifies(Offers.der(fromRaw: raw), over: Array("\(parts[0]).\(parts[1])".utf8),
                                                 publicKey: publicKey, in: dir))

        // Bob redeems the monthly free trial (offerType 1) with an appAccountToken and an appTransactionId.
        let token = "6f1c9a52-2b0e-4c47-9d7e-0a8b4c2d1e3f", appTransactionId = "704" + E2E.uniqueId()
        var trial = TransactionPayload(bundleId: tenant.bundleId)
        trial.appAccountToken = token
        trial.extra = [("offerType", 1), ("offerDiscountType", "FREE_TRIAL"), ("appTransactionId", .string(appTransactionId))]
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try trial.mint(), user: "bob").status, 201)
        // Carol redeems the yearly one (so the yearly product's group is known from stored facts).
        var carolTrial = TransactionPayload(bundleId: tenant.bundleId)
        carolTrial.productId = Self.yearly
        carolTrial.extra = [("offerType", 1)]
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try carolTrial.mint(), user: "carol").status, 201)
        // An ordinary purchase (no offer) makes nobody ineligible.
        let plain = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try plain.mint(), user: "dan").status, 201)

        XCTAssertEqual(try decision(try ask("bob")), [false, "introductory_offer_used"])
        XCTAssertEqual(try decision(try ask("bob", Self.yearly)), [false, "introductory_offer_used_in_group"])
        XCTAssertEqual(try decision(try ask("carol")), [false, "introductory_offer_used_in_group"])
        XCTAssertEqual(try decision(try ask("dan")), [true, "no_introductory_offer_used"])
        // Another Apple account of the same person: the user id is Bob's appAccountToken (either case) …
        XCTAssertEqual(try decision(try ask(token.uppercased())), [false, "introductory_offer_used"])
        // … or the app passes Bob's appTransactionId, or one of Bob's transactions.
        XCTAssertEqual(try decision(try ask("erin", transaction: appTransactionId)), [false, "introductory_offer_used"])
        XCTAssertEqual(try decision(try ask("frank", transaction: trial.transactionId)),
                       [false, "introductory_offer_used"])
        // The signature says what the decision says.
        let refused = try ask("bob")
        let refusedClaims = try E2E.payload(ofJWS: try XCTUnwrap(try refused.json()["signature"]?.stringValue))
        XCTAssertEqual(refusedClaims["allowIntroductoryOffer"], false)
        XCTAssertEqual(refusedClaims.objectValue?.keys,
                       ["iss", "iat", "aud", "bid", "nonce", "productId", "allowIntroductoryOffer"])

        // Unmapped products, bad bodies and projects without credentials answer as offer signing does.
        assertError(try ask("bob", "com.e2e.unmapped"), 404, "PRODUCT_NOT_FOUND")
        let invalid = try server.client.post(path(tenant.publicKey), json: [
            "product_id": "", "user_id": 5, "transaction_id": "12ab",
        ], headers: backend)
        assertError(invalid, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try invalid.json()["details"], [
            ["path": ["user_id"], "message": "Expected string"],
            ["path": ["product_id"], "message": "String must contain at least 1 character(s)"],
            ["path": ["transaction_id"], "message": "Must be 1 to 32 decimal digits (a transaction id or appTransactionId)"],
        ])
        let bare = try api.createProject()
        try api.mapProduct(bare, Self.monthly)
        assertError(try server.client.post(path(bare.publicKey), json: ["product_id": .string(Self.monthly),
                                                                         "user_id": "u"],
                                           headers: ["Authorization": "Bearer \(bare.secretKey)"]),
                    400, "APP_STORE_CREDENTIALS_MISSING")
        // Another project's secret key is not this project's.
        assertError(try ask("bob", headers: ["Authorization": "Bearer \(bare.secretKey)"]), 401, "AUTH_INVALID_SECRET_KEY")

        let log = server.stderr
        for line in p8.bodyLines where log.contains(line) { XCTFail("key material in the log") }
        server.stopAndAssertCleanExit()
    }
}
