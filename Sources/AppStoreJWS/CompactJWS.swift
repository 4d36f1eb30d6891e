import Primitives

public import Crypto

/// Writes compact ES256 JWS (RFC 7515 §7.1): `base64url(header).base64url(payload).base64url(r‖s)`.
///
/// The one author of JWS we sign ourselves: Apple's API token (JWT) and StoreKit's promotional-offer signature.
/// The caller supplies the header and payload as JSON bytes exactly as they should be signed.
public enum CompactJWS {
    /// Signs `header` and `payload` (JSON bytes) with `key`.
    public static func signES256(header: [UInt8], payload: [UInt8], key: P256.PrivateKey) throws(CryptoError) -> String {
        let signingInput = Base64.encodeURL(header) + "." + Base64.encodeURL(payload)
        let signature = try key.signES256(Array(signingInput.utf8))
        return signingInput + "." + Base64.encodeURL(signature)
    }

    /// Base64url without padding (RFC 7515 §2), for callers that build other parts of a token.
    public static func base64URL(_ bytes: [UInt8]) -> String { Base64.encodeURL(bytes) }
}
