import Domain
public import Foundation
public import Primitives

/// How a verification was carried out (shared by every `Verified*` result).
public struct VerificationDetails: Sendable, Equatable {
    /// Where the effective date came from.
    public typealias DateSource = OpenValue<VerificationDetailsDateSourceTag, String>

    /// The instant at which every certificate had to be valid.
    public var effectiveDate: Date
    /// Where `effectiveDate` came from.
    public var effectiveDateSource: DateSource
    /// The environment the payload claims (already checked against the policy).
    public var environment: AppStoreEnvironment
    /// True when the chain was a cache hit (only the signature was verified).
    public var chainCacheHit: Bool
    /// True for Xcode data: the signature was checked with the x5c[0] key, but no chain, validity
    /// or marker OID (Xcode signs with a per-project self-signed certificate).
    public var isXcodeSigned: Bool
}

/// A verified, decoded JWS: the typed payload, its JSON exactly as signed, and how it was verified. One shape for
/// every kind of signed data (`VerifiedTransaction`, `VerifiedRenewalInfo`, `VerifiedAppTransaction`).
public struct VerifiedPayload<Payload: Sendable>: Sendable {
    /// The typed payload.
    public var payload: Payload
    /// The payload JSON exactly as signed (store as jsonb).
    public var payloadJSON: [UInt8]
    /// How it was verified.
    public var details: VerificationDetails
    /// `payloadJSON` as text.
    public var payloadString: String { String(decoding: payloadJSON, as: UTF8.self) }
}

/// A verified, decoded transaction.
public typealias VerifiedTransaction = VerifiedPayload<JWSTransaction>
/// A verified, decoded renewal info.
public typealias VerifiedRenewalInfo = VerifiedPayload<JWSRenewalInfo>
/// A verified, decoded app transaction.
public typealias VerifiedAppTransaction = VerifiedPayload<AppTransaction>

extension VerifiedPayload where Payload == JWSTransaction {
    /// The typed transaction (`payload`).
    public var transaction: JWSTransaction { payload }
}

extension VerifiedPayload where Payload == JWSRenewalInfo {
    /// The typed renewal info (`payload`).
    public var renewalInfo: JWSRenewalInfo { payload }
}

extension VerifiedPayload where Payload == AppTransaction {
    /// The typed app transaction (`payload`).
    public var appTransaction: AppTransaction { payload }
}

/// A verified notification together with its verified nested JWS.
public struct VerifiedNotification: Sendable {
    /// The typed payload.
    public var notification: NotificationPayload
    /// The payload JSON exactly as signed.
    public var payloadJSON: [UInt8]
    /// How the outer JWS was verified.
    public var details: VerificationDetails
    /// `data.signedTransactionInfo`, verified with the same policy.
    public var transaction: VerifiedTransaction?
    /// `data.signedRenewalInfo`, verified with the same policy.
    public var renewalInfo: VerifiedRenewalInfo?
    /// `appData.signedAppTransactionInfo`, verified with the same policy.
    public var appTransaction: VerifiedAppTransaction?
    /// `payloadJSON` as text.
    public var payloadString: String { String(decoding: payloadJSON, as: UTF8.self) }
}

/// Tells `VerificationDetails.DateSource` apart from the other open vocabularies.
public enum VerificationDetailsDateSourceTag {}

extension VerificationDetails.DateSource {
    /// The payload's `signedDate` (Apple's offline rule).
    public static let signedDate = VerificationDetails.DateSource(rawValue: "signedDate")
    /// An app transaction's `receiptCreationDate`.
    public static let receiptCreationDate = VerificationDetails.DateSource(rawValue: "receiptCreationDate")
    /// The current time: a notification without `signedDate` (Apple's fallback).
    public static let now = VerificationDetails.DateSource(rawValue: "now")
    /// The caller's explicit instant (`at:`), e.g. `bouncer verify --at`.
    public static let caller = VerificationDetails.DateSource(rawValue: "caller")
}
