public import AppStoreJWS
import Crypto
public import Foundation
public import Primitives

/// Verifies StoreKit 1 app receipts locally, with no call to Apple.
///
/// Pipeline, each step a named function whose failure names the step:
/// 1. decode: base64 (whitespace allowed) → DER, size limit;
/// 2. PKCS#7: a `SignedData` ContentInfo with embedded `data` content and exactly one SignerInfo;
/// 3. signature: the signer certificate (named by the SignerInfo, carried in the message) signed the content,
///    with SHA-1 (receipts until January 2025) or SHA-256 (since); any other digest is refused;
/// 4. payload: our own DER reader decodes the (now integrity-checked) attributes, creation date (12) included;
/// 5. Xcode receipts (type `Xcode`) are signed by a self-signed "StoreKit" certificate: nothing Apple to verify,
///    so they are refused unless the policy allows Xcode (and Sandbox), and then marked environment `Xcode`;
///    every other receipt, whatever type it claims, goes through steps 6–7 before any claim is believed;
/// 6. chain: signer → embedded WWDR intermediate → Apple Inc. Root, judged at the creation date (or `at`),
///    like the JWS `signedDate` rule: a receipt stays valid data after its signing certificate expires;
/// 7. marker OIDs: 1.2.840.113635.100.6.11.1 on the leaf, 1.2.840.113635.100.6.2.1 on the intermediate;
/// 8. claims: bundle id equals the policy's, then the receipt type's environment is allowed.
public struct ReceiptVerifier: Sendable {
    /// The largest receipt accepted, in DER bytes (receipts of long purchase histories reach a few hundred KB).
    public static let maxReceiptBytes = 2 * 1024 * 1024

    private let store: CertificateStore
    /// SHA-256 of each trusted root's DER (diagnostics and tests).
    public let rootFingerprints: [[UInt8]]

    /// Trusts the embedded Apple Inc. Root only (the default).
    public static let apple: ReceiptVerifier = {
        // The embedded bytes are covered by a unit test; the empty fallback rejects everything rather than crash.
        ReceiptVerifier(rootDERs: [AppleRootCertificates.appleIncRoot]) ?? ReceiptVerifier(store: CertificateStore(certificates: []), fingerprints: [])
    }()

    private init(store: CertificateStore, fingerprints: [[UInt8]]) {
        self.store = store
        self.rootFingerprints = fingerprints
    }

    /// Trusts exactly these DER root certificates (tests, `bouncer verify --root`); nil if any does not parse or
    /// the list is empty.
    public init?(rootDERs: [[UInt8]]) {
        guard !rootDERs.isEmpty else { return nil }
        var certificates: [Certificate] = []
        for der in rootDERs {
            guard let certificate = Certificate(der: der) else { return nil }
            certificates.append(certificate)
        }
        self.init(store: CertificateStore(certificates: certificates), fingerprints: rootDERs.map { Digest.sha256($0) })
    }

    /// Verifies a base64 receipt as StoreKit 1 SDKs send it (`receipt-data`); whitespace and line breaks are ignored.
    public func verify(base64 text: String, policy: VerificationPolicy, at date: Date? = nil) throws(VerificationError) -> VerifiedReceipt {
        try verify(der: Self.decodeBase64(text), policy: policy, at: date)
    }

    /// Verifies a DER receipt. `date` replaces the creation date as the instant the chain is judged at.
    public func verify(der: [UInt8], policy: VerificationPolicy, at date: Date? = nil) throws(VerificationError) -> VerifiedReceipt {
        guard !der.isEmpty else { throw .receiptFormat(.encoding, "the receipt is empty") }
        guard der.count <= Self.maxReceiptBytes else { throw .receiptFormat(.encoding, "the receipt exceeds \(Self.maxReceiptBytes) bytes") }
        let message = try Self.parsePKCS7(der)
        let signer = try Self.checkSignature(message)
        let payload = try Self.decodePayload(message.content)
        let effective = date ?? payload.creationDate.date
        let source: VerifiedReceipt.DateSource = date == nil ? .receiptCreationDate : .override
        var chainSubjects: [String] = []
        let claimed = Self.environment(ofReceiptType: payload.receiptType)
        if claimed == .xcode {
            // Nothing Apple to verify: the (self-signed) receipt's own claim decides, so it must be allowed first.
            try Self.checkEnvironment(payload, claimed, policy: policy)
        } else {
            // Everything else is Apple's or nothing: the chain comes before any claim is believed.
            chainSubjects = try validateChain(signer: signer, certificates: message.certificates, at: effective)
        }
        try Self.checkBundleId(payload, policy: policy)
        let environment = try Self.checkEnvironment(payload, claimed, policy: policy)
        return VerifiedReceipt(
            payload: payload, environment: environment, effectiveDate: effective, effectiveDateSource: source,
            digestAlgorithm: message.digestAlgorithm.name, isXcodeSigned: environment == .xcode,
            signerSubject: signer.subjectDescription, chainSubjects: chainSubjects)
    }

    /// The payload of a receipt read WITHOUT any verification (for diagnostics of a rejected receipt only, e.g.
    /// `bouncer verify` showing what an expired receipt holds); nil if it is not a readable receipt.
    public static func decodeUnverified(der: [UInt8]) -> AppReceiptPayload? {
        guard !der.isEmpty, der.count <= maxReceiptBytes, let message = try? parsePKCS7(der) else { return nil }
        return try? decodePayload(message.content)
    }

    // MARK: Steps

    static func parsePKCS7(_ der: [UInt8]) throws(VerificationError) -> PKCS7SignedData {
        do {
            return try PKCS7SignedData(der: der)
        } catch {
            throw .receiptFormat(.pkcs7, "not a PKCS#7 SignedData receipt: \(error.reason)", debug: error.debugDetail)
        }
    }

    static func checkSignature(_ message: PKCS7SignedData) throws(VerificationError) -> Certificate {
        guard message.digestAlgorithm == .sha1 || message.digestAlgorithm == .sha256 else {
            throw .receiptFailed(.signature, "digest algorithm \(message.digestAlgorithm) is not SHA-1 or SHA-256")
        }
        guard let signer = message.signer else {
            throw .receiptFailed(.signature, "the receipt does not carry the certificate its SignerInfo names")
        }
        do {
            try message.verifySignature()
        } catch {
            throw .receiptFailed(.signature, "the receipt's signature does not verify", debug: error.debugDetail)
        }
        return signer
    }

    static func decodePayload(_ content: [UInt8]) throws(VerificationError) -> AppReceiptPayload {
        do {
            return try ReceiptPayloadDecoder.decode(content)
        } catch {
            var failure = VerificationError.receiptFormat(.payload, "malformed receipt payload: \(error.reason)")
            failure.field = error.field
            throw failure
        }
    }

    /// The environment a receipt type stands for (nil for a type Apple has not defined).
    public static func environment(ofReceiptType type: String) -> AppStoreEnvironment? {
        switch type {
        case "Production", "ProductionVPP": return .production
        case "ProductionSandbox", "ProductionVPPSandbox": return .sandbox
        case "Xcode": return .xcode
        default: return nil
        }
    }

    @discardableResult
    static func checkEnvironment(_ payload: AppReceiptPayload, _ claimed: AppStoreEnvironment?,
                                 policy: VerificationPolicy) throws(VerificationError) -> AppStoreEnvironment {
        guard let environment = claimed else {
            throw VerificationError(code: .environmentNotAllowed, step: .claims, reason: "unknown receipt type \"\(payload.receiptType)\"")
        }
        guard environment.isAccepted(in: policy.environments, allowXcode: policy.allowXcode) else {
            // The rule is StoreEnvironment.isAccepted, the JWS path's: test data needs the flag AND Sandbox.
            if environment.isLocalTesting {
                throw VerificationError(code: .environmentNotAllowed, step: .claims,
                                        reason: "Xcode (StoreKit Testing) receipts need allow_xcode and Sandbox among the project's environments")
            }
            throw VerificationError(code: .environmentNotAllowed, step: .claims,
                                    reason: "\(environment.rawValue) receipts (type \(payload.receiptType)) are not allowed for this project")
        }
        return environment
    }

    func validateChain(signer: Certificate, certificates: [Certificate], at date: Date) throws(VerificationError) -> [String] {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let intermediates = certificates.filter { $0 != signer }
        let built: [Certificate]
        switch store.validate(leaf: signer, intermediates: intermediates, at: seconds, strict: false) {
        case .success(let path): built = path
        case .failure(let failure):
            switch failure.code {
            case .expired, .notYetValid, .unreadableValidity:
                throw .receiptFailed(.validity, "\(failure.reason) at \(Self.iso8601(date)) (depth \(failure.depth))", debug: failure.debugDetail)
            default:
                throw .receiptFailed(.chain, "the signer does not chain to Apple Inc. Root: \(failure.reason)", debug: failure.debugDetail)
            }
        }
        // Apple's shape: leaf → WWDR intermediate → root.
        guard built.count == 3 else { throw .receiptFailed(.chain, "expected leaf → WWDR intermediate → root; the path has \(built.count) certificates") }
        let leaf = built[0], intermediate = built[1]
        if let problem = AppleSigningChain.problem(leaf: leaf, intermediate: intermediate, leafName: "signer") {
            throw .receiptFailed(.oid, problem)
        }
        return built.map(\.subjectDescription)
    }

    static func checkBundleId(_ payload: AppReceiptPayload, policy: VerificationPolicy) throws(VerificationError) {
        guard payload.bundleId == policy.bundleId else {
            throw VerificationError(code: .bundleIdMismatch, step: .claims,
                                           reason: "receipt bundle id \(payload.bundleId) is not the project's \(policy.bundleId)")
        }
    }

    // MARK: Input

    /// Standard base64 (RFC 4648 §4) with ASCII whitespace ignored (receipts are often wrapped at 64 or 76
    /// columns); padding optional, at the end only. Bounded by `maxReceiptBytes`.
    static func decodeBase64(_ text: String) throws(VerificationError) -> [UInt8] {
        var text = text
        // withUTF8 rethrows untyped errors: carry the typed one out in a Result.
        return try text.withUTF8 { bytes in Result { () throws(VerificationError) in try decodeBase64(bytes) } }.get()
    }

    /// `Base64.decodeWrapped`, its refusals named for the receipt.
    static func decodeBase64(_ input: UnsafeBufferPointer<UInt8>) throws(VerificationError) -> [UInt8] {
        let output: [UInt8]
        do throws(Base64.WrappedFailure) {
            output = try Base64.decodeWrapped(input, maxBytes: maxReceiptBytes)
        } catch {
            switch error {
            case .unexpectedCharacter: throw .receiptFormat(.encoding, "receipt is not base64: unexpected character")
            case .tooMuchPadding: throw .receiptFormat(.encoding, "receipt is not base64: too much padding")
            case .dataAfterPadding: throw .receiptFormat(.encoding, "receipt is not base64: data after padding")
            case .truncated: throw .receiptFormat(.encoding, "receipt is not base64: truncated")
            case .wrongPadding: throw .receiptFormat(.encoding, "receipt is not base64: wrong padding")
            case .tooLong: throw .receiptFormat(.encoding, "the receipt exceeds \(maxReceiptBytes) bytes")
            }
        }
        guard !output.isEmpty else { throw .receiptFormat(.encoding, "the receipt is empty") }
        return output
    }

    /// A receipt file's bytes as DER: raw DER (starts with a SEQUENCE tag) as is, anything else as base64 text.
    public static func der(fromFileBytes bytes: [UInt8]) throws(VerificationError) -> [UInt8] {
        if bytes.first == DERTag.sequence { return bytes }
        return try bytes.withUnsafeBufferPointer { buffer in Result { () throws(VerificationError) in try decodeBase64(buffer) } }.get()
    }

    static func iso8601(_ date: Date) -> String {
        RFC3339.wholeSeconds(secondsSince1970: date.timeIntervalSince1970)
    }
}

/// A receipt that passed every step: the decoded payload plus how it was verified.
public struct VerifiedReceipt: Sendable {
    /// Where the instant the chain was judged at came from.
    public enum DateSource: String, Sendable {
        /// The receipt's creation date (field 12), the default.
        case receiptCreationDate
        /// The caller's `at` (e.g. `bouncer verify --at`).
        case override
    }

    /// Every decoded field.
    public var payload: AppReceiptPayload
    /// Production, Sandbox or Xcode, from the receipt type.
    public var environment: AppStoreEnvironment
    /// The instant the signer chain was judged at.
    public var effectiveDate: Date
    /// Where `effectiveDate` came from.
    public var effectiveDateSource: DateSource
    /// `SHA1` or `SHA256`.
    public var digestAlgorithm: String
    /// True for Xcode receipts: signed by a local self-signed certificate, no Apple chain checked.
    public var isXcodeSigned: Bool
    /// The signer certificate's subject (one-line form).
    public var signerSubject: String
    /// The validated path's subjects, leaf first (empty for Xcode receipts).
    public var chainSubjects: [String]
}

extension VerificationError {
    /// A receipt that is not what StoreKit 1 writes (`invalidReceiptFormat`), refused at `step`.
    static func receiptFormat(_ step: Step, _ reason: String, debug: String = "") -> VerificationError {
        VerificationError(code: .invalidReceiptFormat, step: step, reason: reason, debugDetail: debug)
    }

    /// A receipt whose signature or chain does not verify (`receiptVerificationFailed`), refused at `step`.
    static func receiptFailed(_ step: Step, _ reason: String, debug: String = "") -> VerificationError {
        VerificationError(code: .receiptVerificationFailed, step: step, reason: reason, debugDetail: debug)
    }
}
