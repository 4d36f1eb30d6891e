import AppStoreServerAPI
import Crypto
@testable import Domain
import Foundation
import JSON
import XCTest

/// The JWT Apple requires, without a network: header and claims, the signature, caching and renewal.
final class AppStoreTokenSignerTests: XCTestCase {
    private let key = try? P256.PrivateKey()

    private func credentials(issuer: String = "57246542-96fe-1a63-e053-0824d011072a", keyId: String = "2X9R4HXF34",
                             bundleId: String = "com.example.app", pem: String? = nil) throws -> AppStoreAPICredentials {
        let key = try XCTUnwrap(key)
        let meta = AppStoreCredentials(issuerId: issuer, keyId: keyId, keyFingerprint: key.fingerprint, createdAt: Date(), updatedAt: Date())
        return AppStoreAPICredentials(credentials: UnsealedAppStoreCredentials(credentials: meta, privateKeyPEM: try pem ?? key.pkcs8PEM()),
                                      bundleId: bundleId, projectId: UUID())
    }

    private func decode(_ token: String) throws -> (header: JSONObject, claims: JSONObject, input: [UInt8], signature: [UInt8]) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(parts.count, 3)
        func bytes(_ text: String) throws -> [UInt8] {
            var b64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while b64.count % 4 != 0 { b64 += "=" }
            return Array(try XCTUnwrap(Data(base64Encoded: b64)))
        }
        let header = try XCTUnwrap(JSONParser.parse(try bytes(parts[0])).objectValue)
        let claims = try XCTUnwrap(JSONParser.parse(try bytes(parts[1])).objectValue)
        return (header, claims, Array("\(parts[0]).\(parts[1])".utf8), try bytes(parts[2]))
    }

    func testHeaderClaimsAndSignature() throws {
        let signer = AppStoreTokenSigner()
        let now = Date(timeIntervalSince1970: 1_750_000_000.9)
        let token = try signer.token(for: credentials(), now: now)
        let (header, claims, input, signature) = try decode(token)
        XCTAssertTrue(header.orderedEquals(["alg": "ES256", "kid": "2X9R4HXF34", "typ": "JWT"]), "\(header)")
        XCTAssertTrue(claims.orderedEquals([
            "iss": "57246542-96fe-1a63-e053-0824d011072a", "iat": 1_750_000_000, "exp": 1_750_001_200,
            "aud": "appstoreconnect-v1", "bid": "com.example.app",
        ]), "\(claims)")
        XCTAssertTrue(try XCTUnwrap(key).publicKey.verifyES256(rawSignature: signature, message: input))
    }

    func testCachedUntilTheRenewalMarginThenRenewed() throws {
        let signer = AppStoreTokenSigner(lifetime: 20 * 60, renewalMargin: 5 * 60)
        let start = Date(timeIntervalSince1970: 1_750_000_000)
        let first = try signer.token(for: credentials(), now: start)
        XCTAssertEqual(try signer.token(for: credentials(), now: start.addingTimeInterval(14 * 60)), first)
        XCTAssertEqual(signer.tokensSigned, 1)
        let renewed = try signer.token(for: credentials(), now: start.addingTimeInterval(15 * 60 + 1))
        XCTAssertNotEqual(renewed, first)
        XCTAssertEqual(try decode(renewed).claims["iat"], 1_750_000_901)
        XCTAssertEqual(signer.tokensSigned, 2)
    }

    func testCacheIsPerIssuerKeyAndBundle() throws {
        let signer = AppStoreTokenSigner()
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        let a = try signer.token(for: credentials(), now: now)
        let b = try signer.token(for: credentials(bundleId: "com.example.other"), now: now)
        let c = try signer.token(for: credentials(keyId: "ABCDEFGHIJ"), now: now)
        let d = try signer.token(for: credentials(issuer: "11111111-2222-3333-4444-555555555555"), now: now)
        XCTAssertEqual(Set([a, b, c, d]).count, 4)
        XCTAssertEqual(signer.tokensSigned, 4)
        XCTAssertEqual(try decode(b).claims["bid"], "com.example.other")
        XCTAssertEqual(try decode(c).header["kid"], "ABCDEFGHIJ")
    }

    func testAClockSteppedBackDoesNotKeepAStaleToken() throws {
        let signer = AppStoreTokenSigner()
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        let first = try signer.token(for: credentials(), now: now)
        let earlier = try signer.token(for: credentials(), now: now.addingTimeInterval(-3600))
        XCTAssertNotEqual(first, earlier)
    }

    func testLifetimeIsClampedToApplesSixtyMinutes() throws {
        let signer = AppStoreTokenSigner(lifetime: 5 * 3600)
        XCTAssertEqual(signer.lifetime, 3600)
        let claims = try decode(try signer.token(for: credentials(), now: Date(timeIntervalSince1970: 1_750_000_000))).claims
        XCTAssertEqual(claims["exp"], 1_750_003_600)
    }

    func testInvalidateForcesANewToken() throws {
        let signer = AppStoreTokenSigner()
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        _ = try signer.token(for: credentials(), now: now)
        signer.invalidate(try credentials())
        _ = try signer.token(for: credentials(), now: now)
        XCTAssertEqual(signer.tokensSigned, 2)
    }

    func testAKeyThatDoesNotLoadIsInvalidRequestWithoutQuotingIt() throws {
        let signer = AppStoreTokenSigner()
        let pem = "-----BEGIN PRIVATE KEY-----\nU0VDUkVUU0VDUkVU\n-----END PRIVATE KEY-----\n"
        XCTAssertThrowsError(try signer.token(for: credentials(pem: pem), now: Date())) { error in
            XCTAssertEqual((error as? AppStoreAPIError)?.kind, .invalidRequest)
            XCTAssertFalse("\(error)".contains("U0VDUkVU"))
        }
    }
}
