import COpenSSL
import Glibc
public import Primitives

/// A set of trusted root certificates and RFC 5280 path validation against them: owns one `X509_STORE`.
///
/// `@unchecked Sendable`: filled in `init` and read-only afterwards; OpenSSL guards `X509_STORE`
/// lookups with its own lock, so concurrent `X509_verify_cert` calls may share it.
public final class CertificateStore: @unchecked Sendable {
    private let store: OpaquePointer?
    /// Kept alive for the store's lifetime (the store holds its own references too).
    private let roots: [Certificate]

    /// Trusts exactly `certificates`.
    public init(certificates: [Certificate]) {
        let store = X509_STORE_new()
        for certificate in certificates {
            // X509_STORE_add_cert takes its own reference; ours stays with `roots`.
            certificate.withX509 { _ = X509_STORE_add_cert(store, $0) }
        }
        OpenSSLErrors.clear()   // a duplicate root leaves a harmless "cert already in hash table"
        self.store = store
        self.roots = certificates
    }

    deinit { if let store { X509_STORE_free(store) } }

    /// RFC 5280 path validation of `leaf` through `intermediates` (untrusted) to one of the roots at
    /// `time` (seconds since the epoch). `strict` sets `X509_V_FLAG_X509_STRICT`. Returns the path
    /// OpenSSL built, leaf first, root last.
    public func validate(leaf: Certificate, intermediates: [Certificate], at time: Int64, strict: Bool) -> Result<[Certificate], ChainValidationError> {
        guard let store else { return .failure(ChainValidationError(code: .internalFailure, depth: 0, reason: "no trust store", debugDetail: "")) }
        guard let context = X509_STORE_CTX_new(), let untrusted = bouncer_sk_X509_new_null() else {
            return .failure(ChainValidationError(code: .internalFailure, depth: 0, reason: "out of memory", debugDetail: OpenSSLErrors.drain()))
        }
        defer { X509_STORE_CTX_free(context); bouncer_sk_X509_free(untrusted) }   // the stack only borrows
        // The stack borrows each X509; `intermediates` keeps them alive until this function returns.
        for intermediate in intermediates { intermediate.withX509 { _ = bouncer_sk_X509_push(untrusted, $0) } }
        return leaf.withX509 { leafPointer in
            OpenSSLErrors.clear()
            guard X509_STORE_CTX_init(context, store, leafPointer, untrusted) == 1 else {
                return .failure(ChainValidationError(code: .internalFailure, depth: 0, reason: "cannot initialise chain validation", debugDetail: OpenSSLErrors.drain()))
            }
            let parameters = X509_STORE_CTX_get0_param(context)   // get0: owned by the context, freed with it
            X509_VERIFY_PARAM_set_time(parameters, time_t(time))
            if strict { X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_X509_STRICT)) }
            guard X509_verify_cert(context) == 1 else {
                let code = X509_STORE_CTX_get_error(context)
                let depth = Int(X509_STORE_CTX_get_error_depth(context))
                let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "code \(code)"
                return .failure(ChainValidationError(code: ChainValidationError.Code(verifyError: code), depth: depth, reason: text, debugDetail: OpenSSLErrors.drain()))
            }
            guard let chain = X509_STORE_CTX_get0_chain(context) else {
                return .failure(ChainValidationError(code: .internalFailure, depth: 0, reason: "no built chain", debugDetail: OpenSSLErrors.drain()))
            }
            var built: [Certificate] = []
            for index in 0..<bouncer_sk_X509_num(chain) {
                // Elements are borrowed from the context; Certificate(borrowing:) takes its own reference.
                guard let element = bouncer_sk_X509_value(chain, index) else { continue }
                built.append(Certificate(borrowing: element))
            }
            return .success(built)
        }
    }
}

/// Why a certificate path did not validate.
public struct ChainValidationError: Error, Sendable, CustomStringConvertible {
    /// Stable, extensible classification of OpenSSL's verify error.
    /// An open vocabulary (`OpenValue`, one author of the idiom); its known values are the extension's static members.
    public typealias Code = OpenValue<CodeTag, String>
    /// Tells `ChainValidationError.Code` apart from the other open vocabularies.
    public enum CodeTag {}

    /// Classification.
    public var code: Code
    /// Position in the path of the failing certificate (0 = leaf).
    public var depth: Int
    /// OpenSSL's verify error text (e.g. "certificate has expired"), or what could not run.
    public var reason: String
    /// OpenSSL's error queue (internals: logs only).
    public var debugDetail: String

    /// `reason at depth N`.
    public var description: String { "\(reason) (depth \(depth))" }
}

extension ChainValidationError.Code {
    /// A certificate's notAfter is before the validation time.
    public static let expired = Self(rawValue: "expired")
    /// A certificate's notBefore is after the validation time.
    public static let notYetValid = Self(rawValue: "notYetValid")
    /// A validity field cannot be compared with the validation time.
    public static let unreadableValidity = Self(rawValue: "unreadableValidity")
    /// The path does not lead to a trusted root.
    public static let untrusted = Self(rawValue: "untrusted")
    /// Any other RFC 5280 failure (constraints, signature, purpose, strictness).
    public static let rejected = Self(rawValue: "rejected")
    /// The leaf does not name the expected host (TLS only).
    public static let hostnameMismatch = Self(rawValue: "hostnameMismatch")
    /// OpenSSL could not run the validation.
    public static let internalFailure = Self(rawValue: "internalFailure")

    init(verifyError code: Int32) {
        switch code {
        case X509_V_ERR_CERT_HAS_EXPIRED: self = .expired
        case X509_V_ERR_CERT_NOT_YET_VALID: self = .notYetValid
        case X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD, X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD: self = .unreadableValidity
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
             X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
             X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE: self = .untrusted
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH: self = .hostnameMismatch
        default: self = .rejected
        }
    }
}
