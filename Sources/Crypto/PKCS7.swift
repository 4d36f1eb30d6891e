import COpenSSL

/// A PKCS#7 / CMS `SignedData` message with its content embedded (RFC 5652 §5): owns one OpenSSL
/// `CMS_ContentInfo`, freed in `deinit`.
///
/// Parsing reads the structure only; nothing here is trusted until `verifySignature()` succeeds, and even then
/// only as "signed by `signer`": whether that certificate is trustworthy is a chain question for the caller
/// (`CertificateStore.validate`), judged at the caller's date.
///
/// Not `Sendable`: OpenSSL caches the signer certificate inside the message while verifying. Parse one per use.
public final class PKCS7SignedData {
    /// The signed content's digest algorithm, as the SignerInfo names it.
    public struct DigestAlgorithm: Hashable, Sendable, CustomStringConvertible {
        /// OpenSSL's short name (`SHA1`, `SHA256`, …) or the dotted OID when OpenSSL has none.
        public let name: String
        /// SHA-1 (StoreKit 1 receipts until January 2025).
        public static let sha1 = DigestAlgorithm(name: "SHA1")
        /// SHA-256 (StoreKit 1 receipts since January 2025).
        public static let sha256 = DigestAlgorithm(name: "SHA256")
        /// The name.
        public var description: String { name }
    }

    private let cms: OpaquePointer
    /// The encapsulated content (eContent), exactly as signed.
    public let content: [UInt8]
    /// Every certificate the message carries, in message order (untrusted).
    public let certificates: [Certificate]
    /// The embedded certificate the single SignerInfo names (issuer and serial or subject key id), if any.
    public let signer: Certificate?
    /// The SignerInfo's digest algorithm.
    public let digestAlgorithm: DigestAlgorithm

    /// Parses one DER/BER `ContentInfo` of type `signedData` carrying `data` content and exactly one SignerInfo.
    /// Trailing bytes, detached content, other content types or several signers are `.invalidInput`.
    public init(der: [UInt8]) throws(CryptoError) {
        guard !der.isEmpty, der.count <= Int(Int32.max) else { throw CryptoError(.invalidInput, "empty or oversized PKCS#7 input") }
        OpenSSLErrors.clear()
        guard case let (parsed, consumedAll)? = OpenSSLCoding.decode(der, with: { d2i_CMS_ContentInfo(nil, $0, $1) }) else {
            throw CryptoError(.invalidInput, "not a PKCS#7 ContentInfo")
        }
        // A class init that throws before every property is set never runs `deinit`: free by hand until `cms` is ours.
        let parts: Parts
        do throws(CryptoError) {
            guard consumedAll else { throw CryptoError(.invalidInput, "trailing bytes after the PKCS#7 ContentInfo") }
            parts = try Self.read(parsed)
        } catch {
            CMS_ContentInfo_free(parsed)
            throw error
        }
        cms = parsed
        content = parts.content
        certificates = parts.certificates
        signer = parts.signer
        digestAlgorithm = parts.digestAlgorithm
        OpenSSLErrors.clear()
    }

    private struct Parts {
        var content: [UInt8]
        var certificates: [Certificate]
        var signer: Certificate?
        var digestAlgorithm: DigestAlgorithm
    }

    /// Reads the parts of a parsed message; borrows `message`, never frees it.
    private static func read(_ message: OpaquePointer) throws(CryptoError) -> Parts {
        guard OBJ_obj2nid(CMS_get0_type(message)) == NID_pkcs7_signed else { throw CryptoError(.invalidInput, "PKCS#7 content type is not signedData") }
        guard OBJ_obj2nid(CMS_get0_eContentType(message)) == NID_pkcs7_data else { throw CryptoError(.invalidInput, "signed content type is not data") }
        // get0: the octet string belongs to the message.
        guard let slot = CMS_get0_content(message), let octets = slot.pointee else { throw CryptoError(.invalidInput, "signed content is detached or missing") }
        var content: [UInt8] = []
        let length = Int(ASN1_STRING_length(octets))
        if length > 0, let bytes = ASN1_STRING_get0_data(octets) {
            content = Array(UnsafeBufferPointer(start: bytes, count: length))
        }

        // get1: the stack and each certificate carry a new reference; Certificate(borrowing:) takes its own,
        // then pop_free drops the stack's.
        var certificates: [Certificate] = []
        if let stack = CMS_get1_certs(message) {
            for index in 0..<bouncer_sk_X509_num(stack) {
                if let element = bouncer_sk_X509_value(stack, index) { certificates.append(Certificate(borrowing: element)) }
            }
            bouncer_sk_X509_pop_free(stack)
        }

        // get0: the SignerInfo stack belongs to the message.
        guard let signerInfos = CMS_get0_SignerInfos(message) else { throw CryptoError(.invalidInput, "PKCS#7 has no SignerInfo") }
        let count = bouncer_sk_CMS_SignerInfo_num(signerInfos)
        guard count == 1, let signerInfo = bouncer_sk_CMS_SignerInfo_value(signerInfos, 0) else {
            throw CryptoError(.invalidInput, "PKCS#7 must have exactly one SignerInfo; found \(max(count, 0))")
        }
        let signer = certificates.first { certificate in certificate.withX509 { CMS_SignerInfo_cert_cmp(signerInfo, $0) == 0 } }

        var digest: UnsafeMutablePointer<X509_ALGOR>? = nil   // get0: belongs to the SignerInfo
        CMS_SignerInfo_get0_algs(signerInfo, nil, nil, &digest, nil)
        var object: OpaquePointer? = nil                       // get0: belongs to the algorithm identifier
        if let digest { withUnsafeMutablePointer(to: &object) { X509_ALGOR_get0($0, nil, nil, digest) } }
        return Parts(content: content, certificates: certificates, signer: signer, digestAlgorithm: DigestAlgorithm(name: name(of: object)))
    }

    deinit { CMS_ContentInfo_free(cms) }

    /// Checks the SignerInfo's signature (and its signed attributes' message digest, when present) over
    /// `content` with `signer`'s public key. No path validation: the caller judges the signer's chain.
    public func verifySignature() throws(CryptoError) {
        guard let signer else { throw CryptoError(.invalidInput, "the signer certificate is not in the message", debugDetail: "") }
        guard let stack = bouncer_sk_X509_new_null() else { throw CryptoError(.internalFailure, "out of memory") }
        defer { bouncer_sk_X509_free(stack) }   // the stack only borrows `signer`
        OpenSSLErrors.clear()
        let ok = signer.withX509 { pointer -> Bool in
            _ = bouncer_sk_X509_push(stack, pointer)
            // NOINTERN: the signer comes from `stack` (the one we matched), not from another embedded certificate.
            // NO_SIGNER_CERT_VERIFY: chains are the caller's, at the caller's date. BINARY: no MIME text rewriting.
            let flags = UInt32(CMS_NOINTERN | CMS_NO_SIGNER_CERT_VERIFY | CMS_BINARY)
            return CMS_verify(cms, stack, nil, nil, nil, flags) == 1
        }
        guard ok else { throw CryptoError(.authenticationFailed, "the PKCS#7 signature does not verify") }
    }

    private static func name(of object: OpaquePointer?) -> String {
        guard let object else { return "unknown" }
        let nid = OBJ_obj2nid(object)
        if nid != NID_undef, let short = OBJ_nid2sn(nid) { return String(cString: short) }
        var buffer = [CChar](repeating: 0, count: 128)
        let written = buffer.withUnsafeMutableBufferPointer { OBJ_obj2txt($0.baseAddress, Int32($0.count), object, 1) }
        guard written > 0 else { return "unknown" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
