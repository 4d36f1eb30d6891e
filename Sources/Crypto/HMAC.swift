import COpenSSL

/// HMAC (RFC 2104) — the one place Bouncer computes and checks message authentication codes.
public enum HMAC {
    /// HMAC-SHA256 of `message` under `key` (32 bytes).
    public static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        // The one-shot HMAC() writes at most EVP_MAX_MD_SIZE; for SHA-256 exactly 32 bytes into `out`.
        // An empty key is legal (RFC 2104 pads it); pass a valid pointer with length 0 rather than NULL.
        let keyStorage = key.isEmpty ? [UInt8(0)] : key
        keyStorage.withUnsafeBytes { keyBuffer in
            message.withUnsafeBufferPointer { message in
                out.withUnsafeMutableBufferPointer { out in
                    _ = COpenSSL.HMAC(EVP_sha256(), keyBuffer.baseAddress, Int32(clamping: key.count),
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

extension HMAC {
    /// HMAC-SHA1 of `message` under `key` (20 bytes): only for TOTP (RFC 6238's default, what authenticator apps
    /// compute), never for new designs.
    public static func sha1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        let keyStorage = key.isEmpty ? [UInt8(0)] : key
        keyStorage.withUnsafeBytes { keyBuffer in
            message.withUnsafeBufferPointer { message in
                out.withUnsafeMutableBufferPointer { out in
                    // Writes exactly 20 bytes for SHA-1 into `out`.
                    _ = COpenSSL.HMAC(EVP_sha1(), keyBuffer.baseAddress, Int32(clamping: key.count),
                                      message.baseAddress, message.count, out.baseAddress, &length)
                }
            }
        }
        return out
    }
}

/// One-time passwords: HOTP (RFC 4226) and TOTP (RFC 6238) with HMAC-SHA1.
public enum OneTimePassword {
    /// The `digits`-digit HOTP value of `secret` at `counter` (RFC 4226 §5.3: dynamic truncation), zero-padded.
    public static func hotp(secret: [UInt8], counter: UInt64, digits: Int = 6) -> String {
        var message = [UInt8](repeating: 0, count: 8)
        for i in 0..<8 { message[i] = UInt8(truncatingIfNeeded: counter &>> UInt64(56 - 8 * i)) }
        let mac = sha1Truncate(HMAC.sha1(key: secret, message: message))
        let clamped = min(max(digits, 1), 9)
        var modulus: UInt32 = 1
        for _ in 0..<clamped { modulus &*= 10 }
        let value = String(mac % modulus)
        return String(repeating: "0", count: max(0, clamped - value.count)) + value
    }

    /// The TOTP time step of `unixSeconds`: `floor(t / period)` (RFC 6238 §4.2, T0 = 0); 0 before 1970.
    public static func step(unixSeconds: Double, period: Int = 30) -> UInt64 {
        guard unixSeconds.isFinite, unixSeconds > 0, period > 0 else { return 0 }
        let steps = (unixSeconds / Double(period)).rounded(.down)
        return steps < 1.8e19 ? UInt64(steps) : UInt64.max
    }

    /// RFC 4226 §5.4: the 31-bit number at the offset the last nibble names.
    private static func sha1Truncate(_ mac: [UInt8]) -> UInt32 {
        guard mac.count == 20, let last = mac.last else { return 0 }
        let offset = Int(last & 0x0F)   // ≤ 15, so offset + 3 ≤ 18 < 20
        return (UInt32(mac[offset] & 0x7F) &<< 24) | (UInt32(mac[offset + 1]) &<< 16)
            | (UInt32(mac[offset + 2]) &<< 8) | UInt32(mac[offset + 3])
    }
}
