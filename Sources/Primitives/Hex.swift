/// Hexadecimal digits of bytes: the one encoder of the codebase (fingerprints, key ids, tokens, signatures, DER tags).
public enum Hex {
    /// Two hex digits per byte, lowercase unless `uppercase`; `""` for no bytes.
    public static func encode(_ bytes: [UInt8], uppercase: Bool = false) -> String {
        let digits: StaticString = uppercase ? "0123456789ABCDEF" : "0123456789abcdef"
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            // byte >> 4 and byte & 0x0F are both < 16: always inside the 16-byte table.
            out.append(digits.utf8Start[Int(byte &>> 4)])
            out.append(digits.utf8Start[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `count` random bytes from `generator` as `2 * count` lowercase hex digits (tokens and secrets).
    ///
    /// One `UInt8.random(in:using:)` per byte, in order, so a seeded generator always gives the same text.
    public static func random(count: Int, using generator: inout some RandomNumberGenerator) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(max(count, 0))
        for _ in 0..<max(count, 0) { bytes.append(UInt8.random(in: 0...255, using: &generator)) }
        return encode(bytes)
    }

    /// The value (0–15) of one hex digit, either case; `nil` for any other byte.
    @inlinable
    public static func value(of byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte &- 0x30
        case 0x41...0x46: return byte &- 0x41 &+ 10
        case 0x61...0x66: return byte &- 0x61 &+ 10
        default: return nil
        }
    }

    /// Whether `byte` is a lowercase hex digit (`0-9a-f`), the only form our keys and tokens are written in.
    @inlinable
    public static func isLowercaseDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)
    }
}
