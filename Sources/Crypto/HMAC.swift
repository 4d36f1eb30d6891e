import COpenSSL

/// HMAC (RFC 2104) — the one place Bouncer computes and checks message authentication codes.
public enum HMAC {
    /// HMAC-SHA256 of `message` under `key` (32 bytes).
    public static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        mac(EVP_sha256(), size: 32, key: key, message: message)
    }

    /// HMAC-SHA1 of `message` under `key` (20 bytes): only for TOTP (RFC 6238's default, what authenticator apps
    /// compute), never for new designs.
    public static func sha1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        mac(EVP_sha1(), size: 20, key: key, message: message)
    }

    /// The one-shot `HMAC()` with digest `md`, whose output is `size` bytes.
    private static func mac(_ md: OpaquePointer?, size: Int, key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        var length: UInt32 = 0
        // The one-shot HMAC() writes at most EVP_MAX_MD_SIZE; for `md` exactly `size` bytes into `out`.
        // An empty key is legal (RFC 2104 pads it); pass a valid pointer with length 0 rather than NULL.
        let keyStorage = key.isEmpty ? [UInt8(0)] : key
        keyStorage.withUnsafeBytes { keyBuffer in
            message.withUnsafeBufferPointer { message in
                out.withUnsafeMutableBufferPointer { out in
                    _ = COpenSSL.HMAC(md, keyBuffer.baseAddress, Int32(clamping: key.count),
                                      message.baseAddress, message.count, out.baseAddress, &length)
                }
            }
        }
        return out
    }

    /// Whether `mac` equals HMAC-SHA256(key, message), compared in constant time.
    public static func isValidSHA256(_ mac: [UInt8], key: [UInt8], message: [UInt8]) -> Bool {
        constantTimeEquals(mac, sha256(key: key, message: message))
    }

    /// Constant-time equality for secrets of public length (`CRYPTO_memcmp`); different lengths are unequal.
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { a in b.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }
}

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    /// `count` random bytes. Traps only if OpenSSL's generator cannot be seeded (the process cannot
    /// safely continue to make keys or nonces then).
    public static func bytes(_ count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(clamping: $0.count)) }
        precondition(ok == 1, "OpenSSL RAND_bytes failed: the random generator is not seeded")
        return out
    }
}
