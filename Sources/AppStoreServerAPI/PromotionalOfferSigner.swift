import AppStoreJWS
import Crypto
public import Domain
import JSON

/// `PromotionalOfferSigning` with the project's In-App Purchase key: DER ECDSA for the legacy form, and the
/// compact ES256 JWS (through `CompactJWS`, the one JWS writer) for the form StoreKit accepts since iOS 18.4 and
/// for introductory-offer eligibility.
///
/// The key is parsed per signature from the opened PEM and dropped with it; nothing here logs or returns it, and
/// `CryptoError`s name the failure, never the key.
public struct PromotionalOfferSigner: PromotionalOfferSigning {
    /// Creates the signer.
    public init() {}

    public func signLegacy(_ payload: String, with credentials: UnsealedAppStoreCredentials) throws -> [UInt8] {
        let key = try P256.PrivateKey(pem: credentials.privateKeyPEM)
        return try key.signDER(Array(payload.utf8))
    }

    public func signJWS(_ claims: PromotionalOfferClaims, with credentials: UnsealedAppStoreCredentials) throws
        -> String
    {
        try Self.sign(Self.payload(claims), with: credentials)
    }

    public func signEligibility(_ claims: IntroductoryOfferEligibilityClaims,
                                with credentials: UnsealedAppStoreCredentials) throws -> String {
        try Self.sign(Self.payload(claims), with: credentials)
    }

    /// The compact ES256 JWS of `payload` under Apple's header, with the project's key.
    private static func sign(_ payload: [UInt8], with credentials: UnsealedAppStoreCredentials) throws -> String {
        let key = try P256.PrivateKey(pem: credentials.privateKeyPEM)
        return try CompactJWS.signES256(header: header(keyId: credentials.credentials.keyId), payload: payload, key: key)
    }

    /// `{"alg":"ES256","kid":…,"typ":"JWT"}`.
    static func header(keyId: String) -> [UInt8] {
        JSONValue.object(["alg": "ES256", "kid": .string(keyId), "typ": "JWT"]).serialized()
    }

    /// The claims in Apple's documented order; `transactionId` only when given.
    static func payload(_ claims: PromotionalOfferClaims) -> [UInt8] {
        payload(issuerId: claims.issuerId, issuedAt: claims.issuedAt, audience: PromotionalOfferClaims.audience,
                bundleId: claims.bundleId, nonce: claims.nonce, productId: claims.productId,
                request: [("offerIdentifier", .string(claims.offerIdentifier))], transactionId: claims.transactionId)
    }

    /// The eligibility claims: the base claims in the same order, then `productId`, `allowIntroductoryOffer` and
    /// `transactionId` only when given.
    static func payload(_ claims: IntroductoryOfferEligibilityClaims) -> [UInt8] {
        payload(issuerId: claims.issuerId, issuedAt: claims.issuedAt,
                audience: IntroductoryOfferEligibilityClaims.audience, bundleId: claims.bundleId, nonce: claims.nonce,
                productId: claims.productId, request: [("allowIntroductoryOffer", .bool(claims.allowIntroductoryOffer))],
                transactionId: claims.transactionId)
    }

    /// Apple's base claims (`iss`, `iat`, `aud`, `bid`, `nonce`), then `productId`, the request's own claims and
    /// `transactionId` only when given: the one writer of the claims of a JWS signed for StoreKit.
    private static func payload(issuerId: String, issuedAt: Int64, audience: String, bundleId: String, nonce: String,
                                productId: String, request: [(String, JSONValue)], transactionId: String?) -> [UInt8] {
        var pairs: [(String, JSONValue)] = [
            ("iss", .string(issuerId)), ("iat", JSONValue(issuedAt)), ("aud", .string(audience)),
            ("bid", .string(bundleId)), ("nonce", .string(nonce)), ("productId", .string(productId)),
        ] + request
        if let transactionId { pairs.append(("transactionId", .string(transactionId))) }
        return JSONValue.object(JSONObject(pairs)).serialized()
    }
}
