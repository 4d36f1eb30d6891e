import JSON
public import Primitives

/// The four kinds of StoreKit 2 signed data, and an unverified guess from a JWS's payload.
public typealias SignedDataKind = OpenValue<SignedDataKindTag, String>
/// Tells `SignedDataKind` apart from the other open vocabularies.
public enum SignedDataKindTag {}

extension SignedDataKind {
    /// `signedTransactionInfo`.
    public static let transaction = SignedDataKind(rawValue: "transaction")
    /// `signedRenewalInfo`.
    public static let renewalInfo = SignedDataKind(rawValue: "renewalInfo")
    /// A notification's `signedPayload`.
    public static let notification = SignedDataKind(rawValue: "notification")
    /// `signedAppTransactionInfo`.
    public static let appTransaction = SignedDataKind(rawValue: "appTransaction")

    /// Guesses the kind from the **unverified** payload (for tools like `bouncer verify`; a server
    /// should know what it asked for): notificationType → notification, receiptType → app
    /// transaction, transactionId → transaction, otherwise renewal info. `nil` if unreadable.
    public static func guess(fromJWS jws: String) -> SignedDataKind? {
        guard let object = unverifiedPayload(ofJWS: jws) else { return nil }
        if object["notificationType"] != nil { return .notification }
        if object["receiptType"] != nil { return .appTransaction }
        if object["transactionId"] != nil { return .transaction }
        return .renewalInfo
    }

    /// The unverified `bundleId` a payload claims (transaction, app transaction, or a notification's
    /// data/summary/…); for tools that verify "whatever app this is".
    public static func claimedBundleId(fromJWS jws: String) -> String? {
        guard let object = unverifiedPayload(ofJWS: jws) else { return nil }
        if let bundleId = object["bundleId"]?.stringValue { return bundleId }
        for field in ["data", "summary", "externalPurchaseToken", "appData"] {
            if let bundleId = object[field]?["bundleId"]?.stringValue { return bundleId }
        }
        return nil
    }

    /// The payload object of a compact JWS, decoded but **not verified**; nil if it is not one.
    private static func unverifiedPayload(ofJWS jws: String) -> JSONObject? {
        let parts = jws.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1].count <= SignedDataVerifier.maxJWSBytes else { return nil }
        let segment = Array(parts[1])
        guard let bytes = segment.withUnsafeBufferPointer({ Base64.decodeURL($0) }) else { return nil }
        return (try? JSONParser.parse(bytes))?.objectValue
    }
}
