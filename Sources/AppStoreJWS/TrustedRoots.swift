internal import COpenSSL
import Foundation

/// The root certificates a JWS chain must end in. Never the `x5c[2]` a JWS carries: like Apple's
/// libraries we ignore it and build the path from x5c[1] to one of these.
public struct TrustedRoots: Sendable {
    /// The shared, read-only OpenSSL store (OpenSSL locks it internally for concurrent verification).
    let store: TrustStore
    /// SHA-256 of each root's DER, for diagnostics (`bouncer verify`) and tests.
    public let fingerprints: [[UInt8]]

    /// Apple Root CA - G3 and G2, embedded in the binary (the default for every verifier).
    public static let apple: TrustedRoots = {
        // The embedded bytes are covered by a unit test, so this cannot fail in a shipped build;
        // the empty fallback still yields a verifier that rejects everything rather than a crash.
        (try? TrustedRoots(derCertificates: [AppleRootCertificates.g3, AppleRootCertificates.g2]))
            ?? TrustedRoots(store: TrustStore(certificates: []), fingerprints: [])
    }()

    private init(store: TrustStore, fingerprints: [[UInt8]]) {
        self.store = store
        self.fingerprints = fingerprints
    }

    /// Trusts exactly these DER certificates. An empty list is a configuration error (as in Apple's
    /// Java library), not a verifier that silently rejects everything.
    public init(derCertificates: [[UInt8]]) throws(RootCertificateError) {
        guard !derCertificates.isEmpty else { throw RootCertificateError(source: "(none)", reason: "at least one root certificate is required") }
        var certificates: [Certificate] = []
        var fingerprints: [[UInt8]] = []
        for (index, der) in derCertificates.enumerated() {
            guard let certificate = Certificate(der: der) else {
                throw RootCertificateError(source: "certificate #\(index + 1)", reason: "not a DER X.509 certificate")
            }
            certificates.append(certificate)
            fingerprints.append(Digest.sha256(der))
        }
        self.store = TrustStore(certificates: certificates)
        self.fingerprints = fingerprints
    }

    /// Loads roots from files, each DER or PEM (a PEM file may hold several certificates). This is how
    /// `BOUNCER_ROOT_CERTIFICATES` (colon-separated paths) replaces the Apple default.
    public init(contentsOf paths: [String]) throws(RootCertificateError) {
        var ders: [[UInt8]] = []
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw RootCertificateError(source: path, reason: "cannot read file")
            }
            let bytes = [UInt8](data)
            if let pem = PEM.certificates(in: bytes) {
                guard !pem.isEmpty else { throw RootCertificateError(source: path, reason: "PEM file holds no CERTIFICATE block") }
                for der in pem {
                    guard Certificate(der: der) != nil else { throw RootCertificateError(source: path, reason: "PEM block is not an X.509 certificate") }
                    ders.append(der)
                }
            } else {
                guard Certificate(der: bytes) != nil else { throw RootCertificateError(source: path, reason: "neither PEM nor a DER X.509 certificate") }
                ders.append(bytes)
            }
        }
        try self.init(derCertificates: ders)
    }

    /// The roots named by `BOUNCER_ROOT_CERTIFICATES` in `environment` (colon-separated DER/PEM paths),
    /// or `.apple` when the variable is unset or empty.
    public static func fromEnvironment(_ environment: [String: String]) throws(RootCertificateError) -> TrustedRoots {
        guard let value = environment["BOUNCER_ROOT_CERTIFICATES"], !value.isEmpty else { return .apple }
        return try TrustedRoots(contentsOf: paths(fromEnvironmentValue: value))
    }

    /// Parses `BOUNCER_ROOT_CERTIFICATES`-style text: colon-separated paths, empty entries ignored.
    public static func paths(fromEnvironmentValue value: String) -> [String] {
        value.split(separator: ":").map(String.init).filter { !$0.isEmpty }
    }
}

/// A root certificate could not be loaded (a configuration error, reported at startup).
public struct RootCertificateError: Error, Sendable, CustomStringConvertible {
    /// The file path or list position that failed.
    public var source: String
    /// What was wrong with it.
    public var reason: String
    /// `source: reason`.
    public var description: String { "\(source): \(reason)" }
}

/// Minimal PEM reader for `-----BEGIN CERTIFICATE-----` blocks (RFC 7468 §2).
enum PEM {
    /// `nil` when the bytes do not look like PEM at all; otherwise the DER of each CERTIFICATE block,
    /// or `[]` if a block is malformed.
    static func certificates(in bytes: [UInt8]) -> [[UInt8]]? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("-----BEGIN ") else { return nil }
        var result: [[UInt8]] = []
        var body: String?
        for rawLine in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line == "-----BEGIN CERTIFICATE-----" { body = ""; continue }
            if line == "-----END CERTIFICATE-----" {
                guard let encoded = body, let der = Base64.decodeStandard(encoded) else { return [] }
                result.append(der)
                body = nil
                continue
            }
            if body != nil { body?.append(line) }
        }
        return result
    }
}

/// Owns the OpenSSL `X509_STORE` holding the trusted roots.
///
/// `@unchecked Sendable`: filled in `init` and read-only afterwards; OpenSSL guards `X509_STORE`
/// lookups with its own lock, so concurrent `X509_verify_cert` calls may share it.
final class TrustStore: @unchecked Sendable {
    private let store: OpaquePointer?
    /// Kept alive for the store's lifetime (the store holds its own references too).
    private let roots: [Certificate]

    init(certificates: [Certificate]) {
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

    /// Why a chain failed, mapped by the verifier onto a `VerificationError` step.
    struct ChainFailure: Error {
        enum Kind { case untrusted, validity, constraints, other }
        var kind: Kind
        var reason: String
        var debug: String
    }

    /// What a successful validation proved: leaf key and the window in which every certificate of
    /// the built path (leaf, intermediate, root) is valid.
    struct ValidatedChain {
        var notBefore: Int64
        var notAfter: Int64
    }

    /// RFC 5280 path validation of leaf ← intermediate ← one of our roots at `time` (seconds since
    /// the epoch). `strict` sets `X509_V_FLAG_X509_STRICT`; only tests against Apple's mock CA
    /// (which lacks key identifiers) turn it off.
    func validate(leaf: Certificate, intermediate: Certificate, at time: Int64, strict: Bool) -> Result<ValidatedChain, ChainFailure> {
        guard let store else { return .failure(ChainFailure(kind: .other, reason: "no trust store", debug: "")) }
        guard let context = X509_STORE_CTX_new(), let untrusted = bouncer_sk_X509_new_null() else {
            return .failure(ChainFailure(kind: .other, reason: "out of memory", debug: OpenSSLErrors.drain()))
        }
        defer { X509_STORE_CTX_free(context); bouncer_sk_X509_free(untrusted) }   // the stack only borrows
        return leaf.withX509 { leafPointer in
            intermediate.withX509 { intermediatePointer in
                _ = bouncer_sk_X509_push(untrusted, intermediatePointer)
                OpenSSLErrors.clear()
                guard X509_STORE_CTX_init(context, store, leafPointer, untrusted) == 1 else {
                    return .failure(ChainFailure(kind: .other, reason: "cannot initialise chain validation", debug: OpenSSLErrors.drain()))
                }
                let parameters = X509_STORE_CTX_get0_param(context)
                X509_VERIFY_PARAM_set_time(parameters, time_t(time))
                if strict { X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_X509_STRICT)) }
                guard X509_verify_cert(context) == 1 else {
                    let code = X509_STORE_CTX_get_error(context)
                    let depth = X509_STORE_CTX_get_error_depth(context)
                    let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "code \(code)"
                    let which = depth == 0 ? "leaf" : depth == 1 ? "intermediate" : "root"
                    let debug = OpenSSLErrors.drain()
                    switch code {
                    case X509_V_ERR_CERT_HAS_EXPIRED:
                        return .failure(ChainFailure(kind: .validity, reason: "\(which) certificate expired at the effective date", debug: debug))
                    case X509_V_ERR_CERT_NOT_YET_VALID:
                        return .failure(ChainFailure(kind: .validity, reason: "\(which) certificate not yet valid at the effective date", debug: debug))
                    case X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD, X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD:
                        return .failure(ChainFailure(kind: .validity, reason: "\(which) certificate validity cannot be compared with the effective date", debug: debug))
                    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
                         X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
                         X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
                        return .failure(ChainFailure(kind: .untrusted, reason: "certificate chain does not lead to a trusted root (\(text) at \(which))", debug: debug))
                    default:
                        return .failure(ChainFailure(kind: .constraints, reason: "\(which) certificate rejected: \(text)", debug: debug))
                    }
                }
                // The path must be exactly leaf ← x5c[1] ← root: a root that is itself the leaf's issuer
                // (2 elements) or a longer path through another store certificate is not Apple's shape.
                guard let chain = X509_STORE_CTX_get0_chain(context), bouncer_sk_X509_num(chain) == 3,
                      let second = bouncer_sk_X509_value(chain, 1), X509_cmp(second, intermediatePointer) == 0,
                      let third = bouncer_sk_X509_value(chain, 2)
                else {
                    return .failure(ChainFailure(kind: .untrusted, reason: "certificate path is not leaf ← x5c[1] ← trusted root", debug: OpenSSLErrors.drain()))
                }
                let root = Certificate(borrowing: third)
                guard let window = Self.intersect([leaf, intermediate, root]) else {
                    return .failure(ChainFailure(kind: .other, reason: "unreadable certificate validity", debug: ""))
                }
                return .success(window)
            }
        }
    }

    private static func intersect(_ certificates: [Certificate]) -> ValidatedChain? {
        var window = ValidatedChain(notBefore: .min, notAfter: .max)
        for certificate in certificates {
            guard let start = certificate.notBefore, let end = certificate.notAfter else { return nil }
            window.notBefore = max(window.notBefore, start)
            window.notAfter = min(window.notAfter, end)
        }
        return window
    }
}
