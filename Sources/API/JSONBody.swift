import Foundation

/// Builds a response body directly as JSON bytes.
///
/// Responses have a fixed shape, so writing them field by field avoids building a `JSONValue` tree (an
/// allocation per node) on the hot path. Callers write keys and punctuation in order; strings are escaped
/// per RFC 8259 §7 (only `"`, `\` and control characters; everything else is valid UTF-8 already).
struct JSONBody {
    private(set) var bytes: [UInt8]

    init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends literal JSON text (keys, punctuation, `true`…), written by us, never by a client.
    mutating func raw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends `value` as a JSON string.
    mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = value
        text.withUTF8 { utf8 in
            // Copy runs that need no escaping in one go; most API strings are a single run.
            var runStart = 0
            for i in 0..<utf8.count {
                let byte = utf8[i]
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i]))
                runStart = i + 1
                switch byte {
                case 0x22: bytes.append(0x5C); bytes.append(0x22)
                case 0x5C: bytes.append(0x5C); bytes.append(0x5C)
                case 0x0A: bytes.append(0x5C); bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(0x5C); bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(0x5C); bytes.append(UInt8(ascii: "t"))
                default:
                    bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30])
                    bytes.append(Self.hexDigit(byte >> 4))
                    bytes.append(Self.hexDigit(byte & 0x0F))
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 48 &+ nibble : 87 &+ nibble
    }

    /// Appends `value` as a JSON string, or `null`.
    mutating func stringOrNull(_ value: String?) {
        if let value { string(value) } else { raw("null") }
    }

    /// Appends `["a","b"]`.
    mutating func strings(_ values: [String]) {
        bytes.append(UInt8(ascii: "["))
        for (i, value) in values.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            string(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Appends `true` or `false`.
    mutating func bool(_ value: Bool) {
        if value { raw("true") } else { raw("false") }
    }

    /// Appends an integer.
    mutating func int(_ value: Int64) {
        bytes.append(contentsOf: String(value).utf8)
    }

    /// Appends an integer, or `null`.
    mutating func intOrNull(_ value: Int64?) {
        if let value { int(value) } else { raw("null") }
    }

    /// Appends `"2027-03-20T00:00:00.000Z"`.
    mutating func date(_ value: Date) {
        bytes.append(UInt8(ascii: "\""))
        ISO8601.append(value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends a date, or `null`.
    mutating func dateOrNull(_ value: Date?) {
        if let value { date(value) } else { raw("null") }
    }
}
