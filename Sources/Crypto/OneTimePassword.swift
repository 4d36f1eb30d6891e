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
