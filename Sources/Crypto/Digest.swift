import COpenSSL

/// SHA-256, the one implementation in Bouncer: JWS signatures, root fingerprints, the chain cache's keys,
/// project secret keys and the metrics token all hash through here (the migrator's checksums are computed
/// by PostgreSQL, so Storage stays free of crypto code).
public enum Digest {
    /// The SHA-256 digest (32 bytes) of `bytes`.
    public static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        // Contiguous inputs (arrays, native strings' UTF-8) are hashed in place; others are copied once.
        if let digest = bytes.withContiguousStorageIfAvailable({ sha256(UnsafeRawBufferPointer($0)) }) {
            return digest
        }
        return Array(bytes).withUnsafeBytes { sha256($0) }
    }

    /// The SHA-256 digest (32 bytes) of the bytes in `buffer` (the hot path: no copy, no generics).
    public static func sha256(_ buffer: UnsafeRawBufferPointer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        digest.withUnsafeMutableBufferPointer { out in
            // EVP_Digest writes exactly 32 bytes into `out` for SHA-256; both buffers outlive the call.
            _ = EVP_Digest(buffer.baseAddress, buffer.count, out.baseAddress, &length,
                           algorithm.md ?? EVP_sha256(), nil)
        }
        return digest
    }

    /// SHA-256 with a fixed prefix already absorbed: `digest(continuingWith: rest)` is SHA-256(prefix ‖ rest).
    ///
    /// Why: a StoreKit 2 JWS's signing input starts with its header segment (~3.3 KB of base64 certificates), the same
    /// bytes for every JWS of a chain; hashing them was ~70k of the ~96k instructions per ES256 digest. The chain
    /// cache keeps one of these per header text it memoizes, so each JWS hashes only its own "payload" part.
    ///
    /// `@unchecked Sendable`: the context is never updated after `init`; each digest works on its own copy.
    public final class SHA256Prefix: @unchecked Sendable {
        /// An `EVP_MD_CTX` that has absorbed the prefix; owned, freed in `deinit`.
        private let context: OpaquePointer

        /// Absorbs `prefix`; `nil` when OpenSSL fails (the caller hashes in full).
        public init?(prefix: UnsafeRawBufferPointer) {
            guard let md = algorithm.md, let context = EVP_MD_CTX_new() else { return nil }
            guard EVP_DigestInit_ex(context, md, nil) == 1,
                  EVP_DigestUpdate(context, prefix.baseAddress, prefix.count) == 1 else {
                EVP_MD_CTX_free(context)
                return nil
            }
            self.context = context
        }

        deinit { EVP_MD_CTX_free(context) }

        /// SHA-256(prefix ‖ `rest`) (32 bytes); `nil` when OpenSSL fails.
        public func digest(continuingWith rest: UnsafeRawBufferPointer) -> [UInt8]? {
            guard let copy = EVP_MD_CTX_new() else { return nil }
            defer { EVP_MD_CTX_free(copy) }
            var digest = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            let ok = digest.withUnsafeMutableBufferPointer { out in
                // The copy gets its own state; the shared context is only read.
                EVP_MD_CTX_copy_ex(copy, context) == 1
                    && EVP_DigestUpdate(copy, rest.baseAddress, rest.count) == 1
                    && EVP_DigestFinal_ex(copy, out.baseAddress, &length) == 1
            }
            return ok && length == 32 ? digest : nil
        }
    }

    /// SHA-256 through an explicitly fetched `EVP_MD`: OpenSSL 3 resolves the legacy `EVP_sha256()`
    /// through its provider method store (locks, hash lookups) on every use, which costs more than
    /// hashing a 4 KB JWS. Fetching once removes that from the hot path.
    private static let algorithm = Algorithm()

    /// Owns the fetched `EVP_MD` for the process lifetime (never freed: a static singleton).
    private final class Algorithm: @unchecked Sendable {
        let md: OpaquePointer?
        init() { md = EVP_MD_fetch(nil, "SHA256", nil) }
    }
}
