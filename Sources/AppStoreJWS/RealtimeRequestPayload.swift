public import Domain
public import Foundation

/// Apple's `DecodedRealtimeRequestBody` (the payload of a real-time retention request's `signedPayload`, Retention
/// Messaging API) decodes straight into Domain's `RetentionRequest`: one type for the value in both layers. It
/// carries no `bundleId`: the app is named by `appAppleId`.
extension RetentionRequest: SignedPayload {
    init(_ reader: PayloadReader) throws(VerificationError) {
        let identifier = try reader.requiredString("requestIdentifier")
        guard let requestIdentifier = UUID(uuidString: identifier) else {
            throw .format(.payload, "requestIdentifier is not a UUID")
        }
        self.init(
            originalTransactionId: try reader.requiredString("originalTransactionId"),
            appAppleId: try reader.int64("appAppleId"),
            productId: try reader.requiredString("productId"),
            userLocale: try reader.requiredString("userLocale"),
            requestIdentifier: requestIdentifier,
            signedDate: try reader.requiredDate("signedDate"),
            environment: AppStoreEnvironment(rawValue: try reader.requiredString("environment")))
    }
}

/// A verified real-time retention request.
public typealias VerifiedRealtimeRequest = VerifiedPayload<RetentionRequest>

extension SignedDataVerifier {
    /// Verifies a real-time retention request's `signedPayload` like a notification (chain to the roots at its
    /// `signedDate`, Apple's OIDs, ES256), then its claims: `appAppleId` (the payload has no bundle id) and
    /// `environment`; a `requestIdentifier` that is no UUID is refused as a malformed payload.
    public func verifyRealtimeRequest(_ jws: String, policy: VerificationPolicy, at date: Date? = nil)
        throws(VerificationError) -> VerifiedRealtimeRequest
    {
        let verified = try verifySigned(jws, kind: .realtimeRequest, policy: policy, at: date)
        return VerifiedPayload(payload: try RetentionRequest(PayloadReader(verified.payload)),
                               payloadJSON: verified.payloadBytes, details: verified.details)
    }
}
