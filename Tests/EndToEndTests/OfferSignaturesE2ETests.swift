import Foundation
import JSON
import XCTest

/// `POST /v1/offers/:publicKey/signatures` over the real `bouncer` process and real PostgreSQL, with a key made by
/// the `openssl` CLI as App Store Connect makes them: every signature is checked by `openssl dgst -verify` against
/// the key's public half (an implementation independent of ours), over the exact bytes Apple's rules name.
final class OfferSignaturesE2ETests: XCTestCase {
    typealias Tools = AppStoreCredentialsE2ETests
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyId = "2X9R4HXF34"
    static let product = "com.e2e.pro.monthly"

    // MARK: Helpers

    func path(_ publicKey: String) -> String { "/v1/offers/\(publicKey)/signatures" }

    /// The PEM public key of `p8`, as a file for `openssl dgst -verify`.
    static func publicKey(of p8: Tools.P8, in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent(p8.url.lastPathComponent + ".pub.pem")
        _ = try Tools.openssl(["pkey", "-in", p8.url.path, "-pubout", "-out", url.path])
        return url
    }

    /// Whether `openssl dgst -sha256 -verify` accepts the DER ECDSA `signature` over `message`.
    static func opensslVerifies(_ signature: [UInt8], over message: [UInt8], publicKey: URL, in dir: URL) throws -> Bool {
        let name = UUID().uuidString
        let messageURL = dir.appendingPathComponent(name + ".msg"), signatureURL = dir.appendingPathComponent(name + ".sig")
        try Data(message).write(to: messageURL)
        try Data(signature).write(to: signatureURL)
        let r = try Tools.tool("/usr/bin/env", ["openssl", "dgst", "-sha256", "-verify", publicKey.path,
                                                "-signature", signatureURL.path, messageURL.path])
        return r.status == 0 && String(decoding: r.stdout, as: UTF8.self).contains("Verified OK")
    }

    /// JOSE's r‖s (RFC 7518 §3.4) as the DER `ECDSA-Sig-Value` openssl reads.
    static func der(fromRaw raw: [UInt8]) -> [UInt8] {
        func integer(_ half: ArraySlice<UInt8>) -> [UInt8] {
            var bytes = Array(half.drop { $0 == 0 })
            if bytes.isEmpty { bytes = [0] }
            if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
            return [0x02, UInt8(bytes.count)] + bytes
        }
        let r = integer(raw.prefix(32)), s = integer(raw.suffix(32))
        return [0x30, UInt8(r.count + s.count)] + r + s
    }

    static func base64URLDecode(_ text: Substring) -> [UInt8]? {
        var b64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        return Data(base64Encoded: b64).map(Array.init)
    }

    static func isLowercaseUUID(_ value: JSONValue?) -> Bool {
        guard let text = value?.stringValue, UUID(uuidString: text) != nil else { return false }
        return text.utf8.count == 36 && text == text.lowercased()
    }

    func offer(_ format: String, offer: String = "WINBACK50", product: String = OfferSignaturesE2ETests.product,
               extra: [(String, JSONValue)] = []) -> JSONValue {
        .object(JSONObject([("product_id", .string(product)), ("offer_id", .string(offer)),
                            ("format", .string(format))] + extra))
    }

    // MARK: Tests

    func testBothFormsVerifyWithTheKeysPublicHalfAndRefusalsAreExact() throws {
        let dir = try Tools.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let p8 = try Tools.generate("AuthKey_2X9R4HXF34.p8", in: dir), other = try Tools.generate("other.p8", in: dir)
        let publicKey = try Self.publicKey(of: p8, in: dir), otherPublicKey = try Self.publicKey(of: other, in: dir)
        let (_, server, api) = try ownServer(label: "offers", overrides: [
            "BOUNCER_ENCRYPTION_KEY": try Tools.encryptionKey(in: dir).base64,
        ])
        let tenant = try api.createProject()
        try api.mapProduct(tenant, Self.product)
        let stored = try server.client.send(
            "PUT", "/v1/admin/projects/\(tenant.id)/app-store-credentials",
            json: ["issuer_id": .string(Self.issuerId), "key_id": .string(Self.keyId), "private_key": .string(p8.pem)],
            headers: E2E.admin)
        XCTAssertEqual(stored.status, 200, stored.description)
        var seen: [String] = []

        // Legacy, with an app account token sent in uppercase: Apple's payload carries it lowercase.
        let before = E2E.ms(0)
        let legacy = try server.client.post(path(tenant.publicKey), json: offer("legacy", extra: [
            ("app_account_token", "A1B2C3D4-E5F6-4789-ABCD-EF0123456789"),
        ]))
        let after = E2E.ms(0)
        seen.append(legacy.text)
        XCTAssertEqual(legacy.status, 200, legacy.description)
        let body = try legacy.json()
        XCTAssertEqual(body.objectValue?.keys, ["key_id", "nonce", "timestamp", "signature"])
        XCTAssertEqual(body["key_id"], .string(Self.keyId))
        XCTAssertTrue(Self.isLowercaseUUID(body["nonce"]), legacy.text)
        let timestamp = try XCTUnwrap(body["timestamp"]?.int64Value)
        XCTAssertTrue((before - 1)...(after + 1) ~= timestamp, "milliseconds of the signing instant: \(timestamp)")
        let signature = try XCTUnwrap(body["signature"]?.stringValue.flatMap { Data(base64Encoded: $0) }.map(Array.init))
        XCTAssertEqual(signature.first, 0x30, "DER ECDSA-Sig-Value")
        func payload(token: String) -> [UInt8] {
            Array([tenant.bundleId, Self.keyId, Self.product, "WINBACK50", token, body["nonce"]?.stringValue ?? "",
                   String(timestamp)].joined(separator: "\u{2063}").utf8)
        }
        let exact = payload(token: "a1b2c3d4-e5f6-4789-abcd-ef0123456789")
        XCTAssertTrue(try Self.opensslVerifies(signature, over: exact, publicKey: publicKey, in: dir))
        XCTAssertFalse(try Self.opensslVerifies(signature, over: exact, publicKey: otherPublicKey, in: dir),
                       "the check can fail: another key")
        XCTAssertFalse(try Self.opensslVerifies(signature, over: payload(token: "A1B2C3D4-E5F6-4789-ABCD-EF0123456789"),
                                                publicKey: publicKey, in: dir), "the check can fail: uppercase token")

        // Legacy without a token: the field is empty; every signature has its own nonce.
        let bare = try server.client.post(path(tenant.publicKey), json: offer("legacy"))
        seen.append(bare.text)
        XCTAssertEqual(bare.status, 200, bare.description)
        let bareBody = try bare.json()
        XCTAssertNotEqual(bareBody["nonce"], body["nonce"])
        let bareSignature = try XCTUnwrap(bareBody["signature"]?.stringValue.flatMap { Data(base64Encoded: $0) })
        let barePayload = [tenant.bundleId, Self.keyId, Self.product, "WINBACK50", "",
                           bareBody["nonce"]?.stringValue ?? "", String(bareBody["timestamp"]?.int64Value ?? 0)]
            .joined(separator: "\u{2063}")
        XCTAssertTrue(try Self.opensslVerifies(Array(bareSignature), over: Array(barePayload.utf8), publicKey: publicKey,
                                               in: dir))

        // JWS with a transaction id: Apple's header and claims, ES256 (raw r‖s) over header.payload.
        let issuedBefore = Int64(Date().timeIntervalSince1970)
        let jws = try server.client.post(path(tenant.publicKey), json: offer("jws", extra: [
            ("transaction_id", "2000000123456789"),
        ]))
        let issuedAfter = Int64(Date().timeIntervalSince1970)
        seen.append(jws.text)
        XCTAssertEqual(jws.status, 200, jws.description)
        XCTAssertEqual(try jws.json().objectValue?.keys, ["signature"])
        let compact = try XCTUnwrap(try jws.json()["signature"]?.stringValue)
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3)
        let header = try JSONParser.parse(try XCTUnwrap(Self.base64URLDecode(parts[0])))
        XCTAssertEqual(header, ["alg": "ES256", "kid": .string(Self.keyId), "typ": "JWT"])
        let claims = try E2E.payload(ofJWS: compact)
        XCTAssertEqual(claims.objectValue?.keys,
                       ["iss", "iat", "aud", "bid", "nonce", "productId", "offerIdentifier", "transactionId"])
        let iat = try XCTUnwrap(claims["iat"]?.int64Value)
        XCTAssertTrue(issuedBefore...issuedAfter ~= iat, "seconds, not milliseconds: \(iat)")
        XCTAssertTrue(Self.isLowercaseUUID(claims["nonce"]), compact)
        XCTAssertEqual(claims, .object(JSONObject([
            ("iss", .string(Self.issuerId)), ("iat", JSONValue(iat)), ("aud", "promotional-offer"),
            ("bid", .string(tenant.bundleId)), ("nonce", claims["nonce"] ?? .null), ("productId", .string(Self.product)),
            ("offerIdentifier", "WINBACK50"), ("transactionId", "2000000123456789"),
        ])))
        let raw = try XCTUnwrap(Self.base64URLDecode(parts[2]))
        XCTAssertEqual(raw.count, 64, "JOSE r‖s, not DER")
        let signingInput = Array("\(parts[0]).\(parts[1])".utf8)
        XCTAssertTrue(try Self.opensslVerifies(Self.der(fromRaw: raw), over: signingInput, publicKey: publicKey, in: dir))
        XCTAssertFalse(try Self.opensslVerifies(Self.der(fromRaw: raw), over: signingInput, publicKey: otherPublicKey,
                                                in: dir))
        // Without a transaction id the claim is absent (not null).
        let jwsBare = try server.client.post(path(tenant.publicKey), json: offer("jws"))
        XCTAssertEqual(jwsBare.status, 200, jwsBare.description)
        let bareClaims = try E2E.payload(ofJWS: try XCTUnwrap(try jwsBare.json()["signature"]?.stringValue))
        XCTAssertEqual(bareClaims.objectValue?.keys, ["iss", "iat", "aud", "bid", "nonce", "productId", "offerIdentifier"])

        // Only mapped products.
        let unmapped = try server.client.post(path(tenant.publicKey), json: offer("legacy", product: "com.e2e.other"))
        assertError(unmapped, 404, "PRODUCT_NOT_FOUND", error: "Product not found in this project.",
                    suggestion: "Offers are signed only for the project's mapped products: map the product first with "
                        + "PUT /v1/admin/projects/:id/products/:productId (or `bouncer product set`), then retry.")
        // A project without credentials.
        let bareTenant = try api.createProject()
        try api.mapProduct(bareTenant, Self.product)
        let missing = try server.client.post(path(bareTenant.publicKey), json: offer("jws"))
        assertError(missing, 400, "APP_STORE_CREDENTIALS_MISSING",
                    error: "The project has no App Store Server API credentials.")
        XCTAssertNil(missing.header("Retry-After"))

        // Bad bodies: every problem at once, with paths.
        func details(_ r: HTTPResponse) throws -> [JSONValue] {
            assertError(r, 400, "VALIDATION_ERROR", error: "Validation error")
            XCTAssertTrue(try r.json()["suggestion"]?.stringValue?.hasPrefix("Request body requires product_id") ?? false)
            return try r.json()["details"]?.arrayValue ?? []
        }
        XCTAssertEqual(try details(try server.client.post(path(tenant.publicKey), json: [:])), [
            ["path": ["product_id"], "message": "Required"], ["path": ["offer_id"], "message": "Required"],
            ["path": ["format"], "message": "Required"],
        ])
        XCTAssertEqual(try details(try server.client.post(path(tenant.publicKey), json: [
            "product_id": "", "offer_id": 5, "format": "v3", "app_account_token": "nope", "transaction_id": "1",
        ])), [
            ["path": ["offer_id"], "message": "Expected string"],
            ["path": ["format"], "message": "Invalid enum value. Expected 'legacy' | 'jws'"],
            ["path": ["product_id"], "message": "String must contain at least 1 character(s)"],
            ["path": ["app_account_token"], "message": "Invalid uuid"],
        ])
        XCTAssertEqual(try details(try server.client.post(path(tenant.publicKey), json: offer("legacy", extra: [
            ("transaction_id", "2000000123456789"),
        ]))), [["path": ["transaction_id"], "message": "Only allowed with format 'jws'"]])
        XCTAssertEqual(try details(try server.client.post(path(tenant.publicKey), json: offer("jws", extra: [
            ("app_account_token", "a1b2c3d4-e5f6-4789-abcd-ef0123456789"), ("transaction_id", "12ab"),
        ]))).map { $0["path"] }, [["app_account_token"], ["transaction_id"]])
        XCTAssertEqual(try details(try server.client.post(path(tenant.publicKey), json: offer("jws", extra: [
            ("transaction_id", .string(String(repeating: "9", count: 33))),
        ]))), [["path": ["transaction_id"],
                "message": "Must be 1 to 32 decimal digits (a transaction id or appTransactionId)"]])

        // Unknown and malformed public keys answer alike, before the body is read.
        for key in ["pk_" + String(repeating: "ab", count: 16), "nope"] {
            assertError(try server.client.post(path(key), json: offer("legacy")), 401, "AUTH_INVALID_PUBLIC_KEY",
                        suggestion: "Use a valid public key (pk_...) in the URL path: POST /v1/offers/:public_key/signatures.")
        }
        // GET is not a route of this path.
        XCTAssertEqual(try server.client.get(path(tenant.publicKey)).status, 405)

        // The key never comes back: not in a response, not in the log.
        seen.append(server.stderr)
        for text in seen {
            for line in p8.bodyLines where text.contains(line) { XCTFail("key material readable back") }
            XCTAssertFalse(text.contains(p8.body))
        }
        server.stopAndAssertCleanExit()
    }

    func testOfferSigningIsRateLimitedPerPublicKey() throws {
        let (_, server, api) = try ownServer(label: "offersrate", overrides: [
            "BOUNCER_RATE_LIMIT_PUBLIC_KEY": "0.01", "BOUNCER_RATE_LIMIT_PUBLIC_KEY_BURST": "2",
        ])
        let tenant = try api.createProject(), other = try api.createProject()
        // Two answers (the product is not mapped), then the key's bucket is empty; another key has its own.
        assertError(try server.client.post(path(tenant.publicKey), json: offer("legacy")), 404, "PRODUCT_NOT_FOUND")
        assertError(try server.client.post(path(tenant.publicKey), json: offer("jws")), 404, "PRODUCT_NOT_FOUND")
        let limited = try server.client.post(path(tenant.publicKey), json: offer("legacy"))
        assertError(limited, 429, "RATE_LIMITED", error: "Too many requests.")
        XCTAssertNotNil(limited.header("Retry-After"))
        XCTAssertEqual(limited.header("RateLimit-Limit"), "2")
        assertError(try server.client.post(path(other.publicKey), json: offer("legacy")), 404, "PRODUCT_NOT_FOUND")
        // Receipts share the key's bucket: the same public key is limited there too.
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, "a.b.c").status, 429)
        server.stopAndAssertCleanExit()
    }
}
