/// Base64 (RFC 4648), the one author of the codebase: base64url without padding (a JWS's three segments, RFC 7515
/// §2; cache messages), standard base64 with padding (`x5c` certificates, RFC 7515 §4.1.6; PEM), and the lenient
/// standard form receipts arrive in (`decodeWrapped`).
///
/// The JWS decoders are strict about the alphabet (no whitespace, no mixing of alphabets) because a lenient decoder
/// lets two different strings stand for the same bytes, which defeats byte-exact caching and logging.
public enum Base64 {
    /// 0–63 for alphabet bytes, 0xFF for everything else. One table per alphabet.
    private static let urlTable: [UInt8] = makeTable(plus: UInt8(ascii: "-"), slash: UInt8(ascii: "_"))
    private static let standardTable: [UInt8] = makeTable(plus: UInt8(ascii: "+"), slash: UInt8(ascii: "/"))

    private static func makeTable(plus: UInt8, slash: UInt8) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        var value: UInt8 = 0
        for ascii in UInt8(ascii: "A")...UInt8(ascii: "Z") { table[Int(ascii)] = value; value &+= 1 }
        for ascii in UInt8(ascii: "a")...UInt8(ascii: "z") { table[Int(ascii)] = value; value &+= 1 }
        for ascii in UInt8(ascii: "0")...UInt8(ascii: "9") { table[Int(ascii)] = value; value &+= 1 }
        table[Int(plus)] = 62
        table[Int(slash)] = 63
        return table
    }

    /// Decodes base64url. Padding is tolerated (JWS forbids it, but some encoders add it); a length
    /// of 1 mod 4 or non-zero trailing bits is rejected so each byte string has one encoding.
    public static func decodeURL(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var end = input.count
        // Strip at most two '=' (a remainder of 2 or 3 symbols needs 2 or 1).
        if end > 0, input[end - 1] == UInt8(ascii: "=") { end -= 1
            if end > 0, input[end - 1] == UInt8(ascii: "=") { end -= 1 }
            guard input.count % 4 == 0 else { return nil }
        }
        return decode(UnsafeBufferPointer(rebasing: input[0..<end]), table: urlTable)
    }

    /// Decodes standard base64 with the required `=` padding (the form `x5c` uses).
    public static func decodeStandard(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard input.count % 4 == 0 else { return nil }
        var end = input.count
        if end > 0, input[end - 1] == UInt8(ascii: "=") { end -= 1
            if end > 0, input[end - 1] == UInt8(ascii: "=") { end -= 1 }
        }
        return decode(UnsafeBufferPointer(rebasing: input[0..<end]), table: standardTable)
    }

    /// Convenience over `String`'s UTF-8 view.
    public static func decodeStandard(_ string: String) -> [UInt8]? {
        var copy = string
        return copy.withUTF8 { decodeStandard($0) }
    }

    /// Decodes unpadded symbols; `nil` on a foreign byte, a dangling single symbol, or non-zero
    /// trailing bits (RFC 4648 §3.5 canonical encoding).
    private static func decode(_ input: UnsafeBufferPointer<UInt8>, table: [UInt8]) -> [UInt8]? {
        let remainder = input.count % 4
        if remainder == 1 { return nil }
        let fullQuads = input.count / 4
        var output = [UInt8]()
        output.reserveCapacity(fullQuads * 3 + 2)
        return table.withUnsafeBufferPointer { table -> [UInt8]? in
            var index = 0
            for _ in 0..<fullQuads {
                let a = table[Int(input[index])], b = table[Int(input[index + 1])]
                let c = table[Int(input[index + 2])], d = table[Int(input[index + 3])]
                guard (a | b | c | d) & 0xC0 == 0 else { return nil }
                let word = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                output.append(UInt8(truncatingIfNeeded: word >> 16))
                output.append(UInt8(truncatingIfNeeded: word >> 8))
                output.append(UInt8(truncatingIfNeeded: word))
                index += 4
            }
            if remainder == 2 {
                let a = table[Int(input[index])], b = table[Int(input[index + 1])]
                guard (a | b) & 0xC0 == 0, b & 0x0F == 0 else { return nil }
                output.append(a << 2 | b >> 4)
            } else if remainder == 3 {
                let a = table[Int(input[index])], b = table[Int(input[index + 1])]
                let c = table[Int(input[index + 2])]
                guard (a | b | c) & 0xC0 == 0, c & 0x03 == 0 else { return nil }
                output.append(a << 2 | b >> 4)
                output.append((b & 0x0F) << 4 | c >> 2)
            }
            return output
        }
    }

    private static let urlAlphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes base64url without padding (JWS segments, cache messages).
    public static func encodeURL(_ bytes: [UInt8]) -> String {
        encode(bytes, alphabet: urlAlphabet, padded: false)
    }

    /// Encodes with `alphabet`, with or without `=` padding of the last quad (both encoders' one loop).
    static func encode(_ bytes: [UInt8], alphabet: [UInt8], padded: Bool) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let word = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(word >> 18 & 63)]); out.append(alphabet[Int(word >> 12 & 63)])
            out.append(alphabet[Int(word >> 6 & 63)]); out.append(alphabet[Int(word & 63)])
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let word = UInt32(bytes[index]) << 16
            out.append(alphabet[Int(word >> 18 & 63)]); out.append(alphabet[Int(word >> 12 & 63)])
            if padded { out.append(UInt8(ascii: "=")); out.append(UInt8(ascii: "=")) }
        } else if rest == 2 {
            let word = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out.append(alphabet[Int(word >> 18 & 63)]); out.append(alphabet[Int(word >> 12 & 63)])
            out.append(alphabet[Int(word >> 6 & 63)])
            if padded { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
