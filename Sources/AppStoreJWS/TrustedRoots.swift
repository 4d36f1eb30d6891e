import Crypto
import Foundation
import Primitives

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

/// The trusted roots as a Crypto `CertificateStore`, plus Apple's path shape and its failure wording.
final class TrustStore: Sendable {
    private let store: CertificateStore

    init(certificates: [Certificate]) { store = CertificateStore(certificates: certificates) }

    /// Why a chain failed, mapped by the verifier onto a `VerificationError` step.
    struct ChainFailure: Error {
        enum Kind { case untrusted, validity, constraints, other }
        var kind: Kind
        var reason: String
        var debug: String
    }

    /// What a successful validation proved: the window in which every certificate of the built path
    /// (leaf, intermediate, root) is valid.
    struct ValidatedChain {
        var notBefore: Int64
        var notAfter: Int64
    }

    /// RFC 5280 path validation of leaf ← intermediate ← one of our roots at `time` (seconds since
    /// the epoch). `strict` sets `X509_V_FLAG_X509_STRICT`; only tests against Apple's mock CA
    /// (which lacks key identifiers) turn it off.
    func validate(leaf: Certificate, intermediate: Certificate, at time: Int64, strict: Bool) -> Result<ValidatedChain, ChainFailure> {
        let chain: [Certificate]
        switch store.validate(leaf: leaf, intermediates: [intermediate], at: time, strict: strict) {
        case .success(let built):
            chain = built
        case .failure(let failure):
            let which = failure.depth == 0 ? "leaf" : failure.depth == 1 ? "intermediate" : "root"
            let debug = failure.debugDetail
            switch failure.code {
            case .expired:
                return .failure(ChainFailure(kind: .validity, reason: "\(which) certificate expired at the effective date", debug: debug))
            case .notYetValid:
                return .failure(ChainFailure(kind: .validity, reason: "\(which) certificate not yet valid at the effective date", debug: debug))
            case .unreadableValidity:
                return .failure(ChainFailure(kind: .validity, reason: "\(which) certificate validity cannot be compared with the effective date", debug: debug))
            case .untrusted:
                return .failure(ChainFailure(kind: .untrusted, reason: "certificate chain does not lead to a trusted root (\(failure.reason) at \(which))", debug: debug))
            case .internalFailure:
                return .failure(ChainFailure(kind: .other, reason: failure.reason, debug: debug))
            default:
                return .failure(ChainFailure(kind: .constraints, reason: "\(which) certificate rejected: \(failure.reason)", debug: debug))
            }
        }
        // The path must be exactly leaf ← x5c[1] ← root: a root that is itself the leaf's issuer
        // (2 elements) or a longer path through another store certificate is not Apple's shape.
        guard chain.count == 3, chain[1] == intermediate else {
            return .failure(ChainFailure(kind: .untrusted, reason: "certificate path is not leaf ← x5c[1] ← trusted root", debug: OpenSSLErrors.drain()))
        }
        guard let window = Self.intersect([leaf, intermediate, chain[2]]) else {
            return .failure(ChainFailure(kind: .other, reason: "unreadable certificate validity", debug: ""))
        }
        return .success(window)
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
