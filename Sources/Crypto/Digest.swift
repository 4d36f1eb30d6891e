internal import COpenSSL

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
