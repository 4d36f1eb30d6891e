public import Domain
public import Primitives

/// Why a signed-data verification failed, for a StoreKit 2 JWS and a StoreKit 1 receipt (`AppReceipt`) alike: a
/// stable `code` for clients, the pipeline `step` that failed, and a human `reason` that is safe to return (no
/// secrets, no OpenSSL internals).
public struct VerificationError: DetailedError, Sendable {
    /// A stable, machine-readable error code: the port's (`VerificationFailure.Code`), so the verifier and the API
    /// read one table of codes and wire strings.
    public typealias Code = VerificationFailure.Code

    /// The pipeline step that rejected the input, in the order they run.
    public typealias Step = OpenValue<VerificationErrorStepTag, String>

    /// Stable code.
    public var code: Code
    /// The step that failed.
    public var step: Step
    /// Human reason, safe for clients.
    public var reason: String
    /// False for every offline failure; reserved for a future OCSP seam (network errors retry).
    public var isRetryable: Bool
    /// Internal detail (OpenSSL error queue), for logs only, never for responses.
    public var debugDetail: String
    /// The payload field at fault, when one is (e.g. `expiresDate`, `data.signedDate`; a receipt's under
    /// verifyReceipt's JSON names, `in_app[3].expires_date`): the API names it in `details[].path` after the request
    /// field.
    public var field: String?

    /// Creates an error; `debugDetail` is for logs only.
    public init(code: Code, step: Step, reason: String, isRetryable: Bool = false, debugDetail: String = "") {
        self.code = code
        self.step = step
        self.reason = reason
        self.isRetryable = isRetryable
        self.debugDetail = debugDetail
    }

    /// `CODE (step): reason`, safe for clients.
    public var description: String { "\(code.rawValue) (\(step.rawValue)): \(reason)" }

    static func format(_ step: Step, _ reason: String) -> VerificationError {
        VerificationError(code: .invalidJWSFormat, step: step, reason: reason)
    }
    /// A payload date that is no instant of `SignedDateRange`: outside it, or not a number of milliseconds (beyond
    /// Int64, a string). Names the field, so the API puts it in `details[].path`.
    static func invalidDate(_ field: String, isNumber: Bool = true) -> VerificationError {
        var error = VerificationError.format(.payload, isNumber ? "payload field \(field) is outside \(SignedDateRange.text)"
                                                                 : "payload field \(field) must be a number of milliseconds")
        error.field = field
        return error
    }
    static func failed(_ step: Step, _ reason: String, debug: String = "") -> VerificationError {
        VerificationError(code: .jwsVerificationFailed, step: step, reason: reason, debugDetail: debug)
    }
}

/// Tells `VerificationError.Step` apart from the other open vocabularies.
public enum VerificationErrorStepTag {}

extension VerificationError.Step {
    /// Splitting into three base64url segments, size limits.
    public static let split = VerificationError.Step(rawValue: "split")
    /// A receipt's base64 text, size limit.
    public static let encoding = VerificationError.Step(rawValue: "encoding")
    /// A receipt's PKCS#7 ContentInfo / SignedData structure.
    public static let pkcs7 = VerificationError.Step(rawValue: "pkcs7")
    /// Decoding the header JSON.
    public static let header = VerificationError.Step(rawValue: "header")
    /// The `alg` header parameter.
    public static let algorithm = VerificationError.Step(rawValue: "algorithm")
    /// The `x5c` header parameter: count, base64, DER.
    public static let x5c = VerificationError.Step(rawValue: "x5c")
    /// Path validation to a configured root (untrusted root, constraints, critical extensions): Apple Root CA G3 or
    /// G2 for a JWS, Apple Inc. Root for a receipt.
    public static let chain = VerificationError.Step(rawValue: "chain")
    /// A certificate outside its validity period at the effective date.
    public static let validity = VerificationError.Step(rawValue: "validity")
    /// Apple's marker OIDs, leaf key usage and key type.
    public static let oid = VerificationError.Step(rawValue: "oid")
    /// The ES256 signature over `header.payload`; a receipt signer's signature over the content, and its digest
    /// algorithm.
    public static let signature = VerificationError.Step(rawValue: "signature")
    /// Decoding the payload JSON into its typed model (a receipt's: its ASN.1, with our DER reader).
    public static let payload = VerificationError.Step(rawValue: "payload")
    /// bundleId, appAppleId and environment against the policy.
    public static let claims = VerificationError.Step(rawValue: "claims")

    /// The step as the public contract names it (openapi.yaml, Error.details[].step): one of `format`,
    /// `header`, `chain`, `signature`, `claims`. The finer internal steps stay in logs and metrics.
    public var contractName: String {
        switch self {
        case .split, .encoding, .pkcs7, .payload: return "format"
        case .header, .algorithm, .x5c: return "header"
        case .chain, .validity, .oid: return "chain"
        case .signature: return "signature"
        case .claims: return "claims"
        default: return "format"
        }
    }
}
