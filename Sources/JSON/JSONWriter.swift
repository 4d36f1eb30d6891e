/// Serializes `JSONValue`s into UTF-8 bytes.
///
/// Output is deterministic: object members in insertion order, numbers as their literal text,
/// `/` and non-ASCII unescaped, only `"`, `\` and control characters escaped (short forms where
/// RFC 8259 §7 has them, else `\u00XX`). Compact by default; `pretty` indents by two spaces.
/// Writing recurses once per nesting level: parsed values are bounded by the parser's depth limit,
/// values built in code are the caller's responsibility.
public struct JSONWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]
    /// Whether to emit newlines and two-space indentation.
    public let pretty: Bool
    private var level = 0

    /// A writer with an empty buffer.
    public init(pretty: Bool = false, reservingCapacity capacity: Int = 0) {
        self.pretty = pretty
        self.bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends one value.
    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .number(let number): appendRaw(number.literal)
        case .string(let string): writeString(string)
        case .array(let elements):
            guard !elements.isEmpty else { return append("[]") }
            bytes.append(UInt8(ascii: "["))
            level += 1
            for (position, element) in elements.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                newline()
                write(element)
            }
            level -= 1
            newline()
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            guard !object.isEmpty else { return append("{}") }
            bytes.append(UInt8(ascii: "{"))
            level += 1
            var first = true
            for (key, member) in object {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                newline()
                writeString(key)
                bytes.append(UInt8(ascii: ":"))
                if pretty { bytes.append(UInt8(ascii: " ")) }
                write(member)
            }
            level -= 1
            newline()
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `string` as a quoted, escaped JSON string.
    public mutating func writeString(_ string: String) {
        var text = string
        text.withUTF8 { writeEscaped($0) }
    }

    /// Appends a string the code itself names (an object key) as a quoted JSON string, escaped like any other.
    public mutating func writeString(_ literal: StaticString) {
        writeEscaped(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends `"key":`, after a comma when `comma`: an object member's name the code itself wrote, escaped like any
    /// string. A name needing no escape (all of ours) goes in with one append, as the literal `,"key":` did: response
    /// writers name every member this way on the hot path.
    public mutating func writeKey(_ key: StaticString, comma: Bool) {
        let count = key.utf8CodeUnitCount
        let start = key.utf8Start
        var plain = count <= 120
        var i = 0
        while plain, i &+ 8 <= count {
            plain = ByteLanes.quoteBackslashOrControl(UnsafeRawPointer(start).loadUnaligned(fromByteOffset: i, as: UInt64.self)) == 0
            i &+= 8
        }
        while plain, i < count {
            let byte = start[i]
            plain = byte >= 0x20 && byte != 0x22 && byte != 0x5C
            i &+= 1
        }
        guard plain else {
            if comma { bytes.append(UInt8(ascii: ",")) }
            writeEscaped(UnsafeBufferPointer(start: start, count: count))
            bytes.append(UInt8(ascii: ":"))
            return
        }
        let lead = comma ? 1 : 0
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count &+ 4) { buffer in
            guard let base = buffer.baseAddress else { return }
            if comma { base[0] = UInt8(ascii: ",") }
            base[lead] = UInt8(ascii: "\"")
            (base + (lead &+ 1)).update(from: start, count: count)
            base[lead &+ count &+ 1] = UInt8(ascii: "\"")
            base[lead &+ count &+ 2] = UInt8(ascii: ":")
            bytes.append(contentsOf: UnsafeBufferPointer(start: base, count: lead &+ count &+ 3))
        }
    }

    /// Appends `utf8` quoted, escaping only what RFC 8259 §7 requires.
    private mutating func writeEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        if let base = utf8.baseAddress {
            let count = utf8.count
            let raw = UnsafeRawPointer(base)
            var runStart = 0
            var i = 0
            while i < count {
                if i &+ 8 <= count {
                    // Eight bytes at a time to the first byte that needs escaping, if any.
                    let mask = ByteLanes.quoteBackslashOrControl(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                    if mask == 0 {
                        i &+= 8
                        continue
                    }
                    i &+= mask.trailingZeroBitCount &>> 3
                } else {
                    let byte = base[i]
                    if byte >= 0x20, byte != 0x22, byte != 0x5C {
                        i &+= 1
                        continue
                    }
                }
                bytes.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: i &- runStart))
                appendEscape(for: base[i])
                i &+= 1
                runStart = i
            }
            bytes.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: count &- runStart))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends JSON text the caller wrote itself (keys, punctuation, `true`), never text from a client.
    ///
    /// With `writeString`, this lets a fixed-shape body be written field by field, without a `JSONValue` tree.
    public mutating func writeRaw(_ literal: StaticString) {
        append(literal)
    }

    /// Appends bytes the caller produces in place (numbers, dates); they must already be valid JSON.
    public mutating func writeRaw(_ produce: (inout [UInt8]) -> Void) {
        produce(&bytes)
    }

    /// RFC 8259 §7: short forms where they exist, else `\u00XX`.
    private mutating func appendEscape(for byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case 0x22: bytes.append(UInt8(ascii: "\""))
        case 0x5C: bytes.append(UInt8(ascii: "\\"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        default:
            let hex: StaticString = "0123456789abcdef"
            bytes.append(UInt8(ascii: "u"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(hex.utf8Start[Int(byte &>> 4)])
            bytes.append(hex.utf8Start[Int(byte & 0xF)])
        }
    }

    private mutating func newline() {
        guard pretty else { return }
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * level))
    }

    private mutating func append(_ literal: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    private mutating func appendRaw(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }
}

extension JSONValue {
    /// This value as JSON bytes (compact, or two-space indented when `pretty`).
    public func serialized(pretty: Bool = false) -> [UInt8] {
        var writer = JSONWriter(pretty: pretty, reservingCapacity: 128)
        writer.write(self)
        return writer.bytes
    }

    /// This value as JSON text.
    public func serializedString(pretty: Bool = false) -> String {
        String(decoding: serialized(pretty: pretty), as: UTF8.self)
    }
}
