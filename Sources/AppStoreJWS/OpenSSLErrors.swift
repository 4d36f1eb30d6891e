internal import COpenSSL

/// Hygiene for OpenSSL's thread-local error queue: clear it before a call whose failure we report,
/// drain it after, so one request's leftovers never show up in another's diagnostics.
enum OpenSSLErrors {
    /// Empties the queue (call before an operation whose errors we want to attribute).
    static func clear() { ERR_clear_error() }

    /// Drains the queue into one line like `error:…:ASN1 routines::wrong tag` (for debug detail only:
    /// these strings are OpenSSL internals, not client-facing reasons).
    static func drain() -> String {
        var parts: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if parts.count < 8 {
                buffer.withUnsafeMutableBufferPointer { pointer in
                    if let base = pointer.baseAddress { ERR_error_string_n(code, base, pointer.count) }
                }
                parts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return parts.joined(separator: "; ")
    }
}

/// SHA-256 through OpenSSL with an explicitly fetched `EVP_MD`: OpenSSL 3 resolves the legacy
/// `EVP_sha256()` through its provider method store (locks, hash lookups) on every use, which costs
/// more than hashing a 4 KB JWS. Fetching once removes that from the hot path.
enum SHA256Digest {
    /// Owns the fetched `EVP_MD` for the process lifetime (never freed: a static singleton).
    final class Algorithm: @unchecked Sendable {
        let md: OpaquePointer?
        init() { md = EVP_MD_fetch(nil, "SHA256", nil) }
    }
    static let algorithm = Algorithm()

    /// The 32-byte digest of `bytes`.
    static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        digest.withUnsafeMutableBufferPointer { out in
            _ = EVP_Digest(bytes.baseAddress, bytes.count, out.baseAddress, &length, algorithm.md ?? EVP_sha256(), nil)
        }
        return digest
    }
}
