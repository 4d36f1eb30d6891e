public import Foundation

/// Apple's `DecodedRealtimeRequestBody`: the payload of a real-time retention request's `signedPayload` (Retention
/// Messaging API). It carries no `bundleId`: the app is named by `appAppleId`.
public struct RealtimeRequestPayload: Sendable, Equatable {
    /// The subscription's original transaction id.
    public var originalTransactionId: String
    /// The app's App Store id.
    public var appAppleId: Int64?
    /// The auto-renewable subscription's product id.
    public var productId: String
    /// The device's locale.
    public var userLocale: String
    /// The UUID Apple gives each request.
    public var requestIdentifier: String
    /// When Apple signed it.
    public var signedDate: Date
    /// Sandbox or Production (raw value kept).
    public var environment: AppStoreEnvironment

    init(_ reader: PayloadReader) throws(VerificationError) {
        originalTransactionId = try reader.requiredString("originalTransactionId")
        appAppleId = try reader.int64("appAppleId")
        productId = try reader.requiredString("productId")
        userLocale = try reader.requiredString("userLocale")
        requestIdentifier = try reader.requiredString("requestIdentifier")
        signedDate = try reader.requiredDate("signedDate")
        environment = AppStoreEnvironment(rawValue: try reader.requiredString("environment"))
    }
}

extension RealtimeRequestPayload: SignedPayload {}

/// A verified real-time retention request.
public typealias VerifiedRealtimeRequest = VerifiedPayload<RealtimeRequestPayload>

extension SignedDataVerifier {
    /// Verifies a real-time retention request's `signedPayload` like a notification (chain to the roots at its
    /// `signedDate`, Apple's OIDs, ES256), then its claims: `appAppleId` (the payload has no bundle id) and
    /// `environment`.
    public func verifyRealtimeRequest(_ jws: String, policy: VerificationPolicy, at date: Date? = nil)
        throws(VerificationError) -> VerifiedRealtimeRequest
    {
        let verified = try verifySigned(jws, kind: .realtimeRequest, policy: policy, at: date)
        return VerifiedPayload(payload: try RealtimeRequestPayload(PayloadReader(verified.payload)),
                               payloadJSON: verified.payloadBytes, details: verified.details)
    }
}
