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
        try Self.sign(Self.payload(claims, [("offerIdentifier", .string(claims.offerIdentifier))]), with: credentials)
    }

    public func signEligibility(_ claims: IntroductoryOfferEligibilityClaims,
                                with credentials: UnsealedAppStoreCredentials) throws -> String {
        try Self.sign(Self.payload(claims, [("allowIntroductoryOffer", .bool(claims.allowIntroductoryOffer))]),
                      with: credentials)
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

    /// Apple's base claims (`iss`, `iat`, `aud`, `bid`, `nonce`), then `productId`, the request's own claims
    /// (`request`) and `transactionId` only when given: the one writer of the claims of a JWS signed for StoreKit.
    static func payload<Request>(_ claims: StoreKitSignatureClaims<Request>, _ request: [(String, JSONValue)])
        -> [UInt8]
    {
        var pairs: [(String, JSONValue)] = [
            ("iss", .string(claims.issuerId)), ("iat", JSONValue(claims.issuedAt)),
            ("aud", .string(StoreKitSignatureClaims<Request>.audience)), ("bid", .string(claims.bundleId)),
            ("nonce", .string(claims.nonce)), ("productId", .string(claims.productId)),
        ] + request
        if let transactionId = claims.transactionId { pairs.append(("transactionId", .string(transactionId))) }
        return JSONValue.object(JSONObject(pairs)).serialized()
    }
}
