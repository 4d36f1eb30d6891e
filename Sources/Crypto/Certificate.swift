import COpenSSL
import Glibc

/// An X.509 certificate: owns one OpenSSL `X509`, parsed from DER. Freed in `deinit`; lent out only through `withX509`.
///
/// `@unchecked Sendable`: after `init` the object is never mutated through this wrapper, and OpenSSL
/// documents concurrent read-only use of an `X509` as safe (its lazily cached extension flags are
/// computed under the object's lock).
public final class Certificate: @unchecked Sendable, Equatable {
    private let x509: OpaquePointer

    /// Parses exactly one DER certificate; trailing bytes are rejected (one certificate, one encoding).
    public init?(der: [UInt8]) {
        guard !der.isEmpty, der.count <= Int(Int32.max) else { return nil }
        guard let parsed = OpenSSLCoding.decodeWhole(der, with: { d2i_X509(nil, $0, $1) }, free: X509_free) else {
            return nil
        }
        x509 = parsed
    }

    /// Takes an additional reference on a borrowed `X509` (e.g. an element of OpenSSL's built chain).
    init(borrowing pointer: OpaquePointer) {
        X509_up_ref(pointer)
        x509 = pointer
    }

    deinit { X509_free(x509) }

    /// Lends the raw pointer for the duration of `body`; it must not escape.
    func withX509<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T { try body(x509) }

    /// notBefore as seconds since the Unix epoch (nil if OpenSSL cannot read the time).
    public var notBefore: Int64? { Self.seconds(X509_get0_notBefore(x509)) }
    /// notAfter as seconds since the Unix epoch.
    public var notAfter: Int64? { Self.seconds(X509_get0_notAfter(x509)) }

    private static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }

    /// Whether an extension with exactly this OID (DER content octets, no tag/length) is present and
    /// non-critical. Apple's marker extensions are non-critical; a critical one would not be "ours".
    public func hasNonCriticalExtension(oidContent: [UInt8]) -> Bool {
        let count = X509_get_ext_count(x509)
        guard count > 0 else { return false }
        for index in 0..<count {
            guard let ext = X509_get_ext(x509, index), let object = X509_EXTENSION_get_object(ext) else { continue }
            let length = Int(OBJ_length(object))
            guard length == oidContent.count, let data = OBJ_get0_data(object) else { continue }
            var equal = true
            for i in 0..<length where data[i] != oidContent[i] { equal = false; break }
            if equal { return X509_EXTENSION_get_critical(ext) == 0 }
        }
        return false
    }

    /// True when basicConstraints says CA (leaf certificates must not be CAs).
    public var isCA: Bool { X509_check_ca(x509) != 0 }

    /// False only when a keyUsage extension is present without digitalSignature (RFC 5280 §4.2.1.3:
    /// no extension means no restriction; Apple's own mock leaf has none, real leaves have it).
    public var allowsDigitalSignature: Bool {
        guard X509_get_extension_flags(x509) & UInt32(EXFLAG_KUSAGE) != 0 else { return true }
        return X509_get_key_usage(x509) & UInt32(KU_DIGITAL_SIGNATURE) != 0
    }

    /// The subject in OpenSSL's one-line form (`/C=US/O=…/CN=…`), for error reasons.
    public var subjectDescription: String {
        var buffer = [CChar](repeating: 0, count: 256)
        let ok = buffer.withUnsafeMutableBufferPointer { pointer in
            X509_NAME_oneline(X509_get_subject_name(x509), pointer.baseAddress, Int32(pointer.count)) != nil
        }
        guard ok else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The certificate's public key if it is an EC key on P-256 (the only key ES256 allows).
    public func p256PublicKey() -> P256.PublicKey? {
        guard let key = X509_get0_pubkey(x509) else { return nil }   // borrowed from the X509
        return P256.PublicKey(borrowingP256: key)
    }

    /// The certificate's DER encoding.
    public var derRepresentation: [UInt8] { OpenSSLCoding.encode { i2d_X509(x509, $0) } }

    /// Same certificate (OpenSSL's `X509_cmp`: compares the cached DER digests).
    public static func == (lhs: Certificate, rhs: Certificate) -> Bool { X509_cmp(lhs.x509, rhs.x509) == 0 }
}
