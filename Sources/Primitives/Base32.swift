/// Base32 (RFC 4648 §6, the uppercase alphabet `A–Z2–7`): how authenticator apps read a TOTP secret from an
/// `otpauth://` URI. The one Base32 codec of the codebase.
public enum Base32 {
    private static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

    /// The Base32 text of `bytes`, with `=` padding to a multiple of 8 characters unless `padding` is false
    /// (`otpauth://` URIs leave it out).
    public static func encode(_ bytes: [UInt8], padding: Bool = true) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 4) / 5 * 8)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer &<< 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                // Masked to 5 bits: always inside the 32-character alphabet.
                out.append(alphabet.utf8Start[Int((buffer &>> UInt32(bits)) & 0x1F)])
            }
        }
        if bits > 0 {
            out.append(alphabet.utf8Start[Int((buffer &<< UInt32(5 - bits)) & 0x1F)])
        }
        if padding {
            while out.count % 8 != 0 { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of Base32 `text` (either case, padding optional); nil for any other character or a bad length.
    public static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        var sawPadding = false
        for char in text.utf8 {
            if char == UInt8(ascii: "=") {
                sawPadding = true
                continue
            }
            guard !sawPadding else { return nil }
            let value: UInt32
            switch char {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(char &- UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(char &- UInt8(ascii: "a"))
            case UInt8(ascii: "2")...UInt8(ascii: "7"): value = UInt32(char &- UInt8(ascii: "2")) &+ 26
            default: return nil
            }
            buffer = ((buffer &<< 5) | value) & 0xFFFF
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer &>> UInt32(bits)))
            }
        }
        // Leftover bits must be fewer than 5 (a whole character would carry a byte) and zero.
        guard bits < 5, buffer & ((1 &<< UInt32(bits)) &- 1) == 0 else { return nil }
        return out
    }
}
