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
        let key = try P256.PrivateKey(pem: credentials.privateKeyPEM)
        return try CompactJWS.signES256(header: Self.header(keyId: credentials.credentials.keyId),
                                        payload: Self.payload(claims), key: key)
    }

    public func signEligibility(_ claims: IntroductoryOfferEligibilityClaims,
                                with credentials: UnsealedAppStoreCredentials) throws -> String {
        let key = try P256.PrivateKey(pem: credentials.privateKeyPEM)
        return try CompactJWS.signES256(header: Self.header(keyId: credentials.credentials.keyId),
                                        payload: Self.payload(claims), key: key)
    }

    /// `{"alg":"ES256","kid":…,"typ":"JWT"}`.
    static func header(keyId: String) -> [UInt8] {
        JSONValue.object(["alg": "ES256", "kid": .string(keyId), "typ": "JWT"]).serialized()
    }

    /// The claims in Apple's documented order; `transactionId` only when given.
    static func payload(_ claims: PromotionalOfferClaims) -> [UInt8] {
        var pairs: [(String, JSONValue)] = [
            ("iss", .string(claims.issuerId)), ("iat", JSONValue(claims.issuedAt)),
            ("aud", .string(PromotionalOfferClaims.audience)), ("bid", .string(claims.bundleId)),
            ("nonce", .string(claims.nonce)), ("productId", .string(claims.productId)),
            ("offerIdentifier", .string(claims.offerIdentifier)),
        ]
        if let transactionId = claims.transactionId { pairs.append(("transactionId", .string(transactionId))) }
        return JSONValue.object(JSONObject(pairs)).serialized()
    }

    /// The eligibility claims: the base claims in the same order, then `productId`, `allowIntroductoryOffer` and
    /// `transactionId` only when given.
    static func payload(_ claims: IntroductoryOfferEligibilityClaims) -> [UInt8] {
        var pairs: [(String, JSONValue)] = [
            ("iss", .string(claims.issuerId)), ("iat", JSONValue(claims.issuedAt)),
            ("aud", .string(IntroductoryOfferEligibilityClaims.audience)), ("bid", .string(claims.bundleId)),
            ("nonce", .string(claims.nonce)), ("productId", .string(claims.productId)),
            ("allowIntroductoryOffer", .bool(claims.allowIntroductoryOffer)),
        ]
        if let transactionId = claims.transactionId { pairs.append(("transactionId", .string(transactionId))) }
        return JSONValue.object(JSONObject(pairs)).serialized()
    }
}
