import COpenSSL
import Primitives
import Synchronization

/// NIST P-256 (prime256v1) keys and ES256, the only curve Apple's signed data and App Store Connect keys use.
public enum P256 {}

extension P256 {
    /// An EC P-256 public key: owns one OpenSSL `EVP_PKEY` and verifies ES256 signatures with it.
    ///
    /// `@unchecked Sendable`: the key is immutable after `init`; OpenSSL allows concurrent verifications
    /// with one `EVP_PKEY` as long as each uses its own `EVP_PKEY_CTX`, which the pool guarantees.
    ///
    /// Why a pool: `EVP_PKEY_verify_init` fetches the ECDSA implementation from OpenSSL 3's provider store
    /// on every call (locks, hash-table walks): several times the cost of the P-256 verification itself.
    /// An initialised context can verify any number of digests (as `openssl speed` does), so each key
    /// keeps a few idle ones; a verification borrows one exclusively and returns it.
    public final class PublicKey: @unchecked Sendable {
        private let pkey: OpaquePointer
        /// Idle `EVP_PKEY_CTX`s already set up by `EVP_PKEY_verify_init`; owned here, freed in `deinit`.
        private let idleContexts = Mutex<[VerifyContext]>([])
        /// One `EVP_PKEY_CTX`; `@unchecked Sendable` because the pool hands each to one thread at a time.
        private struct VerifyContext: @unchecked Sendable { let pointer: OpaquePointer }
        private static let maxIdleContexts = 8
        /// The table of multiples of this key (`FixedBaseVerifier`), once built; then every ES256 verification uses it.
        private let fixedBase = AtomicLazyReference<FixedBaseVerifier>()
        /// ES256 verifications so far (counted until the table exists).
        private let verifications = Atomic<Int>(0)
        /// Set by the one thread that builds the table (or tried to: a failure is not retried; `EVP_PKEY_verify` stays).
        private let fixedBaseClaimed = Atomic<Bool>(false)
        /// Verifications after which a key earns its table: building it costs about 340 verifications' instructions
        /// and ~150 KB, and saves ~400k instructions per verification after (break-even near 700). A key verifying
        /// this often is a chain cache's leaf key, which signs every JWS of its months of service; a key used once
        /// or twice (an Xcode x5c[0], a test's) never pays for one.
        static let fixedBaseAfterVerifications = 8

        /// Takes its own reference on `key` (borrowed, e.g. from an `X509` via `X509_get0_pubkey`) when the
        /// key is EC on prime256v1; `nil` for any other type or curve.
        init?(borrowingP256 key: OpaquePointer) {
            guard P256.isP256(key) else { return nil }
            // up_ref: this object now co-owns the key; EVP_PKEY_free in deinit drops our reference only.
            guard EVP_PKEY_up_ref(key) == 1 else { return nil }
            pkey = key
        }

        /// Parses a DER `SubjectPublicKeyInfo` (RFC 5280 §4.1.2.7) holding a P-256 key.
        public init(derSubjectPublicKeyInfo der: [UInt8]) throws(CryptoError) {
            OpenSSLErrors.clear()
            let parsed = OpenSSLCoding.decodeWhole(der, with: { d2i_PUBKEY(nil, $0, $1) }, free: EVP_PKEY_free)
            guard let parsed else { throw CryptoError(.invalidKey, "not a DER SubjectPublicKeyInfo") }
            guard P256.isP256(parsed) else {
                EVP_PKEY_free(parsed)
                throw CryptoError(.unsupportedKey, "public key is not EC P-256")
            }
            pkey = parsed   // d2i_PUBKEY returned a new reference: ours, freed in deinit
        }

        /// Parses a PEM `PUBLIC KEY` block (SubjectPublicKeyInfo) holding a P-256 key.
        public convenience init(pem: String) throws(CryptoError) {
            OpenSSLErrors.clear()
            let parsed = try OpenSSLCoding.readPEM(pem, "public key") { PEM_read_bio_PUBKEY($0, nil, nil, nil) }
            guard let parsed else { throw CryptoError(.invalidKey, "not a PEM PUBLIC KEY") }
            defer { EVP_PKEY_free(parsed) }   // re-parsed from DER below, so this reference is dropped
            try self.init(derSubjectPublicKeyInfo: P256.subjectPublicKeyInfo(parsed))
        }

        deinit {
            idleContexts.withLock { contexts in
                for context in contexts { EVP_PKEY_CTX_free(context.pointer) }
                contexts.removeAll()
            }
            EVP_PKEY_free(pkey)
        }

        /// The DER `SubjectPublicKeyInfo`.
        public var derRepresentation: [UInt8] { P256.subjectPublicKeyInfo(pkey) }

        /// The PEM `PUBLIC KEY` block of `derRepresentation` (RFC 7468 §13).
        public var pemRepresentation: String { PEMWriter.block(label: "PUBLIC KEY", der: derRepresentation) }

        /// SHA-256 of the DER `SubjectPublicKeyInfo`, lowercase hex: a stable key identity for logs and lists.
        public var fingerprint: String { Hex.encode(Digest.sha256(derRepresentation)) }

        /// The affine coordinates (32 bytes each, big-endian): a JWK's `x` and `y` (RFC 7518 §6.2.1) before base64url.
        public var coordinates: (x: [UInt8], y: [UInt8]) {
            get throws(CryptoError) {
                OpenSSLErrors.clear()
                // The uncompressed point 04‖X‖Y (SEC 1 §2.3.3), OpenSSL 3's default encoding for EC keys.
                var point = [UInt8](repeating: 0, count: 65)
                var length = 0
                let ok = point.withUnsafeMutableBufferPointer { buffer in
                    EVP_PKEY_get_octet_string_param(pkey, "encoded-pub-key", buffer.baseAddress, buffer.count, &length)
                }
                guard ok == 1, length == 65, point[0] == 0x04 else {
                    throw CryptoError(.internalFailure, "cannot read the P-256 public point")
                }
                return (Array(point[1...32]), Array(point[33...64]))
            }
        }

        /// A verify-initialised context (from the pool or new); the caller owns it until `recycle`.
        private func borrowContext() -> OpaquePointer? {
            if let context = idleContexts.withLock({ $0.popLast() }) { return context.pointer }
            guard let context = EVP_PKEY_CTX_new(pkey, nil) else { return nil }
            guard EVP_PKEY_verify_init(context) == 1 else { EVP_PKEY_CTX_free(context); return nil }
            return context
        }

        private func recycle(_ context: OpaquePointer) {
            let kept = idleContexts.withLock { contexts -> Bool in
                guard contexts.count < Self.maxIdleContexts else { return false }
                contexts.append(VerifyContext(pointer: context))
                return true
            }
            if !kept { EVP_PKEY_CTX_free(context) }
        }

        /// Verifies a JOSE ES256 signature (RFC 7518 §3.4: 64 bytes, r‖s big-endian) over `message`.
        public func verifyES256(rawSignature: [UInt8], message: UnsafeRawBufferPointer) -> Bool {
            verifyES256(rawSignature: rawSignature, digest: Digest.sha256(message))
        }

        /// Verifies a JOSE ES256 signature over the message whose SHA-256 is `digest` (e.g. from a `Digest.SHA256Prefix`).
        public func verifyES256(rawSignature: [UInt8], digest: [UInt8]) -> Bool {
            guard rawSignature.count == 64, digest.count == 32 else { return false }
            if let table = fixedBaseVerifier() {
                return rawSignature.withUnsafeBufferPointer { signature in
                    digest.withUnsafeBufferPointer { table.verify(rawSignature: signature, digest: $0) }
                }
            }
            return verify(derSignature: P256.derSignature(fromRaw: rawSignature), digest: digest)
        }

        /// Builds this key's fixed-base table now (tests; otherwise it comes after `fixedBaseAfterVerifications`).
        /// False when OpenSSL could not build it: verifications then keep using `EVP_PKEY_verify`.
        @discardableResult
        public func prepareFixedBase() -> Bool {
            if fixedBase.load() != nil { return true }
            guard let built = FixedBaseVerifier(pkey: pkey) else { return false }
            _ = fixedBase.storeIfNil(built)
            return true
        }

        /// Test seam: raw r‖s over a 32-byte `digest`, through the table (`nil` when not built) or `EVP_PKEY_verify`.
        func verifyDigest(rawSignature: [UInt8], digest: [UInt8], fixedBase useTable: Bool) -> Bool? {
            guard useTable else {
                return rawSignature.count == 64 && verify(derSignature: P256.derSignature(fromRaw: rawSignature), digest: digest)
            }
            guard let table = fixedBase.load() else { return nil }
            return rawSignature.withUnsafeBufferPointer { signature in
                digest.withUnsafeBufferPointer { table.verify(rawSignature: signature, digest: $0) }
            }
        }

        /// Whether ES256 verifications use the fixed-base table (tests, diagnostics).
        public var usesFixedBase: Bool { fixedBase.load() != nil }

        /// The table when built; builds it on the verification that reaches the threshold (one thread only).
        private func fixedBaseVerifier() -> FixedBaseVerifier? {
            if let table = fixedBase.load() { return table }
            guard verifications.wrappingAdd(1, ordering: .relaxed).newValue >= Self.fixedBaseAfterVerifications,
                  !fixedBaseClaimed.exchange(true, ordering: .acquiringAndReleasing),
                  let built = FixedBaseVerifier(pkey: pkey) else { return nil }
            return fixedBase.storeIfNil(built)
        }

        /// Verifies a JOSE ES256 signature over `message`.
        public func verifyES256(rawSignature: [UInt8], message: [UInt8]) -> Bool {
            message.withUnsafeBytes { verifyES256(rawSignature: rawSignature, message: $0) }
        }

        /// Verifies a DER `ECDSA-Sig-Value` over SHA-256(`message`) (the form of Apple's promotional offer signatures).
        public func verifyDER(signature: [UInt8], message: [UInt8]) -> Bool {
            verify(derSignature: signature, digest: Digest.sha256(message))
        }

        private func verify(derSignature: [UInt8], digest: [UInt8]) -> Bool {
            guard let context = borrowContext() else { return false }
            let result = derSignature.withUnsafeBufferPointer { signature in
                digest.withUnsafeBufferPointer { digest in
                    EVP_PKEY_verify(context, signature.baseAddress, signature.count, digest.baseAddress, digest.count)
                }
            }
            // A failed verification leaves the context reusable (it holds no per-call state), so it goes
            // back to the pool either way.
            recycle(context)
            return result == 1
        }
    }

    /// Encodes r‖s as the DER `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` OpenSSL expects.
    /// Done by hand (at most 72 bytes, lengths < 128 so short-form) to avoid four allocations of
    /// `ECDSA_SIG`/`BIGNUM` per request. `raw` must be 64 bytes (else the result is an empty array).
    public static func derSignature(fromRaw raw: [UInt8]) -> [UInt8] {
        guard raw.count == 64 else { return [] }
        func integer(_ half: ArraySlice<UInt8>) -> [UInt8] {
            var bytes = Array(half.drop { $0 == 0 })
            if bytes.isEmpty { bytes = [0] }
            if let first = bytes.first, first & 0x80 != 0 { bytes.insert(0, at: 0) }   // keep it positive
            return [0x02, UInt8(bytes.count)] + bytes
        }
        let r = integer(raw[0..<32]), s = integer(raw[32..<64])
        return [0x30, UInt8(r.count + s.count)] + r + s
    }

    /// Decodes a DER `ECDSA-Sig-Value` into JOSE's raw r‖s (64 bytes), through OpenSSL's strict DER parser.
    public static func rawSignature(fromDER der: [UInt8]) throws(CryptoError) -> [UInt8] {
        OpenSSLErrors.clear()
        let parsed = OpenSSLCoding.decodeWhole(der, with: { d2i_ECDSA_SIG(nil, $0, $1) }, free: ECDSA_SIG_free)
        guard let parsed else { throw CryptoError(.invalidInput, "not a DER ECDSA signature") }
        defer { ECDSA_SIG_free(parsed) }
        // get0: r and s stay owned by the ECDSA_SIG (freed with it above).
        guard let r = ECDSA_SIG_get0_r(parsed), let s = ECDSA_SIG_get0_s(parsed) else {
            throw CryptoError(.invalidInput, "ECDSA signature lacks r or s")
        }
        var raw = [UInt8](repeating: 0, count: 64)
        let ok = raw.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            // bn2binpad fails (-1) when a value does not fit 32 bytes: not a P-256 signature.
            return BN_bn2binpad(r, base, 32) == 32 && BN_bn2binpad(s, base + 32, 32) == 32
        }
        guard ok else { throw CryptoError(.invalidInput, "ECDSA signature values exceed 32 bytes") }
        return raw
    }

    /// Whether `key` is an EC key on prime256v1.
    static func isP256(_ key: OpaquePointer) -> Bool {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return false }
        var name = [CChar](repeating: 0, count: 32)
        var length = 0
        let ok = name.withUnsafeMutableBufferPointer { buffer in
            EVP_PKEY_get_group_name(key, buffer.baseAddress, buffer.count, &length)
        }
        guard ok == 1, length <= name.count else { return false }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
    }

    /// DER SubjectPublicKeyInfo of any `EVP_PKEY` (public part only).
    static func subjectPublicKeyInfo(_ key: OpaquePointer) -> [UInt8] { OpenSSLCoding.encode { i2d_PUBKEY(key, $0) } }
}

/// PEM output (RFC 7468): base64 in 64-column lines between BEGIN/END labels.
enum PEMWriter {
    static func block(label: String, der: [UInt8]) -> String {
        let encoded = Base64.encodeStandard(der)
        var lines = ["-----BEGIN \(label)-----"]
        var index = encoded.startIndex
        while index < encoded.endIndex {
            let end = encoded.index(index, offsetBy: 64, limitedBy: encoded.endIndex) ?? encoded.endIndex
            lines.append(String(encoded[index..<end]))
            index = end
        }
        lines.append("-----END \(label)-----")
        return lines.joined(separator: "\n") + "\n"
    }
}
