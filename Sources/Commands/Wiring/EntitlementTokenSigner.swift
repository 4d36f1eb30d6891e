import AppStoreJWS
import Crypto
import Domain
import Foundation
import JSON

/// `EntitlementTokenSigning` over `Crypto.P256` and `CompactJWS` (the one JWS writer): P-256 keys, ES256 tokens.
///
/// The private key is parsed per token from the opened PEM and dropped with it; nothing here logs or returns it.
struct EntitlementTokenSigner: EntitlementTokenSigning {
    func generateKey(now: Date) throws -> (public: SigningKey, private: SigningPrivateKey) {
        let key = try P256.PrivateKey()
        let publicKey = try key.publicKey
        let (x, y) = try publicKey.coordinates
        // 16 hex digits (64 bits) of the SPKI fingerprint: unique among a server's few keys, short in headers.
        let kid = String(publicKey.fingerprint.prefix(16))
        return (SigningKey(kid: kid, x: CompactJWS.base64URL(x), y: CompactJWS.base64URL(y), createdAt: now),
                SigningPrivateKey(kid: kid, pkcs8PEM: try key.pkcs8PEM()))
    }

    func sign(_ claims: EntitlementTokenClaims, with key: SigningPrivateKey) throws -> String {
        let privateKey = try P256.PrivateKey(pem: key.pkcs8PEM)
        return try CompactJWS.signES256(header: Self.header(kid: key.kid), payload: Self.payload(claims), key: privateKey)
    }

    /// `{"alg":"ES256","kid":…,"typ":"JWT"}`.
    static func header(kid: String) -> [UInt8] {
        JSONValue.object(JSONObject([("alg", "ES256"), ("kid", .string(kid)), ("typ", "JWT")])).serialized()
    }

    /// The claims in the documented order; an entitlement without end has `"expires_at": null`.
    static func payload(_ claims: EntitlementTokenClaims) -> [UInt8] {
        let entitlements = claims.entitlements.map { entitlement -> JSONValue in
            .object(JSONObject([("id", .string(entitlement.id)),
                                ("expires_at", entitlement.expiresAt.map { JSONValue($0) } ?? .null)]))
        }
        return JSONValue.object(JSONObject([
            ("iss", .string(claims.issuer)), ("sub", .string(claims.subject)), ("aud", .string(claims.audience)),
            ("iat", JSONValue(claims.issuedAt)), ("exp", JSONValue(claims.expiresAt)),
            ("entitlements", .array(entitlements)),
        ])).serialized()
    }
}
