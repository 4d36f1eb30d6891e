public import Primitives

/// Why a StoreKit 1 receipt was rejected: a stable `code` for clients, the pipeline `step` that failed, and a
/// `reason` safe to return (no OpenSSL internals; those are in `debugDetail`, for logs).
public struct ReceiptVerificationError: DetailedError, Sendable {
    /// A stable, machine-readable code; extensible (static members), compare by `rawValue`.
    public typealias Code = OpenValue<ReceiptVerificationErrorCodeTag, String>

    /// The pipeline step that rejected the receipt, in the order they run.
    public typealias Step = OpenValue<ReceiptVerificationErrorStepTag, String>

    /// Stable code.
    public var code: Code
    /// The step that failed.
    public var step: Step
    /// Human reason, safe for clients.
    public var reason: String
    /// Internal detail (OpenSSL's error queue), for logs only.
    public var debugDetail: String
    /// The receipt field at fault, under verifyReceipt's JSON names (`in_app[3].expires_date`), when one is.
    public var field: String?

    /// Creates an error; `debugDetail` is for logs only.
    public init(code: Code, step: Step, reason: String, debugDetail: String = "") {
        self.code = code
        self.step = step
        self.reason = reason
        self.debugDetail = debugDetail
    }

    /// `CODE (step): reason`, safe for clients.
    public var description: String { "\(code.rawValue) (\(step.rawValue)): \(reason)" }

    static func format(_ step: Step, _ reason: String, debug: String = "") -> ReceiptVerificationError {
        ReceiptVerificationError(code: .invalidReceiptFormat, step: step, reason: reason, debugDetail: debug)
    }
    static func failed(_ step: Step, _ reason: String, debug: String = "") -> ReceiptVerificationError {
        ReceiptVerificationError(code: .verificationFailed, step: step, reason: reason, debugDetail: debug)
    }
}

/// Tells `ReceiptVerificationError.Code` apart from the other open vocabularies.
public enum ReceiptVerificationErrorCodeTag {}

extension ReceiptVerificationError.Code {
    /// Not base64, not PKCS#7 SignedData, or a malformed receipt payload (ASN.1).
    public static let invalidReceiptFormat = ReceiptVerificationError.Code(rawValue: "INVALID_RECEIPT_FORMAT")
    /// Bad signature, unsupported digest, missing signer, untrusted or expired chain, missing Apple marker OID.
    public static let verificationFailed = ReceiptVerificationError.Code(rawValue: "RECEIPT_VERIFICATION_FAILED")
    /// The receipt's bundle id is not the project's.
    public static let bundleIdMismatch = ReceiptVerificationError.Code(rawValue: "BUNDLE_ID_MISMATCH")
    /// The receipt type's environment is not allowed by the policy (Xcode receipts need allow_xcode + Sandbox).
    public static let environmentNotAllowed = ReceiptVerificationError.Code(rawValue: "ENVIRONMENT_NOT_ALLOWED")
}

/// Tells `ReceiptVerificationError.Step` apart from the other open vocabularies.
public enum ReceiptVerificationErrorStepTag {}

extension ReceiptVerificationError.Step {
    /// Base64 text, size limit.
    public static let encoding = ReceiptVerificationError.Step(rawValue: "encoding")
    /// The PKCS#7 ContentInfo / SignedData structure.
    public static let pkcs7 = ReceiptVerificationError.Step(rawValue: "pkcs7")
    /// The signer's signature over the content, and its digest algorithm.
    public static let signature = ReceiptVerificationError.Step(rawValue: "signature")
    /// Decoding the receipt payload (our DER reader).
    public static let payload = ReceiptVerificationError.Step(rawValue: "payload")
    /// Path validation to Apple Inc. Root.
    public static let chain = ReceiptVerificationError.Step(rawValue: "chain")
    /// A certificate outside its validity period at the effective date.
    public static let validity = ReceiptVerificationError.Step(rawValue: "validity")
    /// Apple's marker OIDs and the leaf's key usage.
    public static let oid = ReceiptVerificationError.Step(rawValue: "oid")
    /// Bundle id and environment against the policy.
    public static let claims = ReceiptVerificationError.Step(rawValue: "claims")

    /// The step as the public contract names it (`Error.details[].step`): `format`, `signature`, `chain`, `claims`.
    public var contractName: String {
        switch self {
        case .signature: return "signature"
        case .chain, .validity, .oid: return "chain"
        case .claims: return "claims"
        default: return "format"
        }
    }
}
