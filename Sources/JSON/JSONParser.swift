/// A strict RFC 8259 parser for untrusted bytes.
///
/// Rejects everything the RFC does not allow (comments, trailing commas, leading zeros, NaN,
/// control characters in strings, invalid UTF-8, lone surrogate escapes, a BOM, more than one
/// top-level value) and, beyond the RFC, duplicate object keys: parsers disagree on which copy of
/// a repeated key wins, which lets a signed payload mean two things. Every failure is a
/// `JSONError` with a code and byte offset; no input traps. Recursion is bounded by
/// `Limits.maxDepth`.
public enum JSONParser {
    /// Resource limits applied while parsing.
    public struct Limits: Sendable, Equatable {
        /// Hard ceiling on `maxDepth`. Parsing (and writing) recurses once per level, about
        /// 0.5 KiB of stack per level in release builds (~2 KiB in debug), so even the ceiling
        /// fits a 256 KiB thread stack in release; the default 64 fits one in debug too.
        public static let depthCeiling = 512

        /// Maximum nesting of arrays/objects (a scalar document has depth 0, `[]` depth 1).
        /// Values above `depthCeiling` act as `depthCeiling`.
        public var maxDepth: Int
        /// Maximum size of the whole document in bytes.
        public var maxBytes: Int
        /// Maximum length of one string (keys included), counted in input bytes between the
        /// quotes; the decoded string is never longer.
        public var maxStringBytes: Int
        /// Maximum length of one number literal (RFC 8259 §9 lets parsers limit number size).
        public var maxNumberBytes: Int

        /// Defaults fit API bodies and App Store notifications (tens of KiB) with wide margin.
        public init(maxDepth: Int = 64, maxBytes: Int = 1 << 20, maxStringBytes: Int = 1 << 20, maxNumberBytes: Int = 128) {
            self.maxDepth = maxDepth
            self.maxBytes = maxBytes
            self.maxStringBytes = maxStringBytes
            self.maxNumberBytes = maxNumberBytes
        }
    }

    /// Parses exactly one JSON value from UTF-8 bytes.
    public static func parse(_ bytes: UnsafeRawBufferPointer, limits: Limits = Limits()) throws(JSONError) -> JSONValue {
        guard bytes.count <= limits.maxBytes else { throw JSONError(.tooLarge, at: max(0, limits.maxBytes)) }
        guard let raw = bytes.baseAddress, bytes.count > 0 else { throw JSONError(.unexpectedEnd, at: 0) }
        var parser = Parser(base: raw.assumingMemoryBound(to: UInt8.self), end: bytes.count, limits: limits)
        return try parser.parseDocument()
    }

    /// Parses exactly one JSON value from UTF-8 bytes.
    public static func parse(_ bytes: [UInt8], limits: Limits = Limits()) throws(JSONError) -> JSONValue {
        let result = bytes.withUnsafeBytes { raw in Result { () throws(JSONError) -> JSONValue in try parse(raw, limits: limits) } }
        return try result.get()
    }

    /// Parses exactly one JSON value from any contiguous or non-contiguous byte collection
    /// (`ArraySlice<UInt8>`, `Data`, `String.UTF8View`…). Contiguous storage is read in place.
    public static func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes, limits: Limits = Limits()) throws(JSONError) -> JSONValue {
        let inPlace = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONError) -> JSONValue in try parse(UnsafeRawBufferPointer(buffer), limits: limits) }
        }
        if let inPlace { return try inPlace.get() }
        guard bytes.count <= limits.maxBytes else { throw JSONError(.tooLarge, at: max(0, limits.maxBytes)) }
        return try parse(Array(bytes), limits: limits)
    }

    /// Parses exactly one JSON value from a string's UTF-8.
    public static func parse(_ string: String, limits: Limits = Limits()) throws(JSONError) -> JSONValue {
        var text = string
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONError) -> JSONValue in try parse(UnsafeRawBufferPointer(buffer), limits: limits) }
        }
        return try result.get()
    }
}

/// The scanner. `base[0..<end]` is borrowed for the duration of one `parse` call; every read is
/// preceded by an explicit `< end` check (UnsafePointer subscripts are unchecked in release).
private struct Parser {
    let base: UnsafePointer<UInt8>
    let end: Int
    let maxDepth: Int
    let maxStringBytes: Int
    let maxNumberBytes: Int
    var pos = 0
    var depth = 0
    /// Reused buffer for strings that contain escapes.
    var scratch: [UInt8] = []
    /// Key fingerprints of the objects being parsed (a stack shared by all nesting levels).
    var keyPrints: [UInt64] = []
    /// Elements of the open arrays and members of the open objects, innermost on top.
    let elements = MoveStack<JSONValue>()
    let members = MoveStack<JSONObject.Member>()

    init(base: UnsafePointer<UInt8>, end: Int, limits: JSONParser.Limits) {
        self.base = base
        self.end = end
        self.maxDepth = min(limits.maxDepth, JSONParser.Limits.depthCeiling)
        self.maxStringBytes = limits.maxStringBytes
        self.maxNumberBytes = limits.maxNumberBytes
        keyPrints.reserveCapacity(64)
    }

    mutating func parseDocument() throws(JSONError) -> JSONValue {
        if end >= 3, base[0] == 0xEF, base[1] == 0xBB, base[2] == 0xBF {
            throw JSONError(.byteOrderMark, at: 0)
        }
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard pos == end else { throw JSONError(.trailingData, at: pos) }
        return value
    }

    /// RFC 8259 §2: only SP, HT, LF, CR.
    @inline(__always)
    mutating func skipWhitespace() {
        while pos < end {
            switch base[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos &+= 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONError) -> JSONValue {
        guard pos < end else { throw JSONError(.unexpectedEnd, at: pos) }
        switch base[pos] {
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "{"): return .object(try parseObject())
        case UInt8(ascii: "["): return .array(try parseArray())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw JSONError(.unexpectedCharacter, at: pos)
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONError) {
        let bytes = literal.utf8Start
        for k in 0..<literal.utf8CodeUnitCount {
            let i = pos &+ k
            guard i < end else { throw JSONError(.unexpectedEnd, at: i) }
            guard base[i] == bytes[k] else { throw JSONError(.unexpectedCharacter, at: i) }
        }
        pos &+= literal.utf8CodeUnitCount
    }

    mutating func enterContainer() throws(JSONError) {
        guard depth < maxDepth else { throw JSONError(.tooDeep, at: pos) }
        depth &+= 1
        pos &+= 1  // the opening bracket
        skipWhitespace()
    }

    mutating func parseArray() throws(JSONError) -> [JSONValue] {
        try enterContainer()
        if pos < end, base[pos] == UInt8(ascii: "]") {
            pos &+= 1
            depth &-= 1
            return []
        }
        let start = elements.count
        while true {
            elements.push(try parseValue())
            guard try continues(closing: UInt8(ascii: "]")) else { break }
        }
        depth &-= 1
        return elements.popArray(from: start)
    }

    /// After an array element or object member: consumes `,` and the whitespace after it (true: another one
    /// follows) or `close` (false: the container ended).
    @inline(__always)
    mutating func continues(closing close: UInt8) throws(JSONError) -> Bool {
        skipWhitespace()
        guard pos < end else { throw JSONError(.unexpectedEnd, at: pos) }
        let separator = base[pos]
        if separator == UInt8(ascii: ",") {
            pos &+= 1
            skipWhitespace()
            return true
        }
        guard separator == close else { throw JSONError(.unexpectedCharacter, at: pos) }
        pos &+= 1
        return false
    }

    mutating func parseObject() throws(JSONError) -> JSONObject {
        try enterContainer()
        var index: [String: Int] = [:]
        if pos < end, base[pos] == UInt8(ascii: "}") {
            pos &+= 1
            depth &-= 1
            return JSONObject(uniqueMembers: [], index: index)
        }
        let start = members.count
        // This object's key fingerprints live at keyPrints[printsStart...]; nested objects push
        // above them and pop before we continue.
        let printsStart = keyPrints.count
        while true {
            guard pos < end else { throw JSONError(.unexpectedEnd, at: pos) }
            guard base[pos] == UInt8(ascii: "\"") else { throw JSONError(.unexpectedCharacter, at: pos) }
            let keyOffset = pos
            let (key, print) = try parseString(fingerprint: true)
            // Duplicate check: compare fingerprints (then strings on a match) while small,
            // hash beyond that so hostile objects with many keys stay linear.
            let memberCount = members.count &- start
            if memberCount < JSONObject.indexThreshold {
                for position in keyPrints.indices[printsStart...] where keyPrints[position] == print {
                    if members[start &+ position &- printsStart].key == key { throw JSONError(.duplicateKey, at: keyOffset) }
                }
                keyPrints.append(print)
            } else {
                if index.isEmpty {
                    index.reserveCapacity(memberCount * 2)
                    for position in 0..<memberCount { index[members[start &+ position].key] = position }
                }
                if index.updateValue(memberCount, forKey: key) != nil {
                    throw JSONError(.duplicateKey, at: keyOffset)
                }
            }
            skipWhitespace()
            guard pos < end else { throw JSONError(.unexpectedEnd, at: pos) }
            guard base[pos] == UInt8(ascii: ":") else { throw JSONError(.unexpectedCharacter, at: pos) }
            pos &+= 1
            skipWhitespace()
            let value = try parseValue()
            members.push(JSONObject.Member(key: key, value: value))
            guard try continues(closing: UInt8(ascii: "}")) else { break }
        }
        keyPrints.removeSubrange(printsStart...)
        depth &-= 1
        return JSONObject(uniqueMembers: members.popArray(from: start), index: index)
    }

    mutating func parseNumber() throws(JSONError) -> JSONNumber {
        let start = pos
        let stop = try NumberGrammar.scan(base, from: start, end: end).get()
        guard stop &- start <= maxNumberBytes else { throw JSONError(.tooLarge, at: start) }
        pos = stop
        return JSONNumber(uncheckedLiteral: String(decoding: UnsafeBufferPointer(start: base + start, count: stop &- start), as: UTF8.self))
    }

    // MARK: Strings

    /// Parses the string whose opening quote is at `pos`.
    @inline(__always)
    mutating func parseString() throws(JSONError) -> String {
        try parseString(fingerprint: false).string
    }

    /// Parses the string whose opening quote is at `pos`; with `fingerprint`, also returns a cheap
    /// 64-bit digest of its decoded bytes for duplicate-key checks (equal strings, equal digests).
    @inline(__always)
    mutating func parseString(fingerprint: Bool) throws(JSONError) -> (string: String, print: UInt64) {
        let quoteOffset = pos
        let start = pos &+ 1
        var stop = try scanRun(from: start)
        if base[stop] == UInt8(ascii: "\"") {
            // Fast path: no escapes, the bytes are the string.
            guard stop &- start <= maxStringBytes else { throw JSONError(.tooLarge, at: quoteOffset) }
            pos = stop &+ 1
            let bytes = UnsafeBufferPointer(start: base + start, count: stop &- start)
            return (String(decoding: bytes, as: UTF8.self), fingerprint ? Self.fingerprint(bytes) : 0)
        }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(start: base + start, count: stop &- start))
        while base[stop] == UInt8(ascii: "\\") {
            let resume = try decodeEscape(at: stop)
            stop = try scanRun(from: resume)
            scratch.append(contentsOf: UnsafeBufferPointer(start: base + resume, count: stop &- resume))
        }
        guard stop &- start <= maxStringBytes else { throw JSONError(.tooLarge, at: quoteOffset) }
        pos = stop &+ 1
        return scratch.withUnsafeBufferPointer { bytes in
            (String(decoding: bytes, as: UTF8.self), fingerprint ? Self.fingerprint(bytes) : 0)
        }
    }

    /// Length, first and last eight bytes, mixed. Not a hash table hash: a fast filter in front of
    /// string equality, so colliding keys only cost a string compare.
    @inline(__always)
    static func fingerprint(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        let count = bytes.count
        var head: UInt64 = 0, tail: UInt64 = 0
        if let base = bytes.baseAddress, count >= 8 {
            let raw = UnsafeRawPointer(base)
            head = raw.loadUnaligned(as: UInt64.self)
            tail = raw.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
        } else {
            for byte in bytes { head = head << 8 | UInt64(byte) }
        }
        return (head ^ (tail &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(truncatingIfNeeded: count)) &* 0xFF51_AFD7_ED55_8CCD
    }

    /// Scans string content from `start` to the next `"` or `\` and returns its index (always
    /// `< end`). Validates UTF-8 and rejects raw control characters on the way.
    @inline(__always)
    func scanRun(from start: Int) throws(JSONError) -> Int {
        var i = start
        let raw = UnsafeRawPointer(base)
        while true {
            if i &+ 8 <= end {
                // Eight bytes at a time (SWAR): jump straight to the first byte that is `"`, `\`,
                // < 0x20 or >= 0x80, if any.
                let mask = Self.attentionMask(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                if mask == 0 {
                    i &+= 8
                    continue
                }
                i &+= mask.trailingZeroBitCount &>> 3  // little-endian: low byte first
            } else {
                guard i < end else { throw JSONError(.unexpectedEnd, at: end) }
                let byte = base[i]
                if byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                    i &+= 1
                    continue
                }
            }
            let byte = base[i]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return i }
            if byte < 0x20 { throw JSONError(.controlCharacter, at: i) }
            i &+= try utf8SequenceLength(at: i)
        }
    }

    /// High bit set in each byte lane of `word` that is `"`, `\`, < 0x20 or >= 0x80 (exact for the lowest lane,
    /// which is all `scanRun` uses; see `ByteLanes`).
    @inline(__always)
    static func attentionMask(_ word: UInt64) -> UInt64 {
        ByteLanes.quoteBackslashOrControl(word) | (word & 0x8080_8080_8080_8080)
    }

    /// Length of the well-formed UTF-8 sequence starting with the non-ASCII byte at `i`
    /// (Unicode 15, Table 3-7: no overlongs, no surrogates, nothing above U+10FFFF).
    @inline(__always)
    func utf8SequenceLength(at i: Int) throws(JSONError) -> Int {
        let lead = base[i]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: throw JSONError(.invalidUTF8, at: i)
        }
        guard i &+ length <= end else { throw JSONError(.invalidUTF8, at: i) }
        let second = base[i &+ 1]
        guard second >= low, second <= high else { throw JSONError(.invalidUTF8, at: i) }
        var k = 2
        while k < length {
            guard base[i &+ k] & 0xC0 == 0x80 else { throw JSONError(.invalidUTF8, at: i) }
            k &+= 1
        }
        return length
    }

    /// Decodes the escape whose backslash is at `i` into `scratch`; returns the index after it.
    mutating func decodeEscape(at i: Int) throws(JSONError) -> Int {
        guard i &+ 1 < end else { throw JSONError(.unexpectedEnd, at: end) }
        let decoded: UInt8
        switch base[i &+ 1] {
        case UInt8(ascii: "\""): decoded = 0x22
        case UInt8(ascii: "\\"): decoded = 0x5C
        case UInt8(ascii: "/"): decoded = 0x2F
        case UInt8(ascii: "b"): decoded = 0x08
        case UInt8(ascii: "f"): decoded = 0x0C
        case UInt8(ascii: "n"): decoded = 0x0A
        case UInt8(ascii: "r"): decoded = 0x0D
        case UInt8(ascii: "t"): decoded = 0x09
        case UInt8(ascii: "u"): return try decodeUnicodeEscape(at: i)
        default: throw JSONError(.invalidEscape, at: i)
        }
        scratch.append(decoded)
        return i &+ 2
    }

    /// `\uXXXX`, or a `\uD8xx\uDCxx` surrogate pair (RFC 8259 §7), appended as UTF-8.
    mutating func decodeUnicodeEscape(at i: Int) throws(JSONError) -> Int {
        let unit = try hex4(escapeAt: i)
        var scalar = unit
        var next = i &+ 6
        if unit >= 0xD800, unit <= 0xDBFF {
            // A high surrogate must be followed immediately by `\u` and a low surrogate.
            if next < end, base[next] != UInt8(ascii: "\\") { throw JSONError(.loneSurrogate, at: i) }
            if next &+ 1 < end, base[next &+ 1] != UInt8(ascii: "u") { throw JSONError(.loneSurrogate, at: i) }
            guard next &+ 1 < end else { throw JSONError(.unexpectedEnd, at: end) }
            let low = try hex4(escapeAt: next)
            guard low >= 0xDC00, low <= 0xDFFF else { throw JSONError(.loneSurrogate, at: i) }
            scalar = 0x10000 &+ ((unit &- 0xD800) << 10) &+ (low &- 0xDC00)
            next &+= 6
        } else if unit >= 0xDC00, unit <= 0xDFFF {
            throw JSONError(.loneSurrogate, at: i)
        }
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(truncatingIfNeeded: scalar))
        case 0x80..<0x800:
            scratch.append(0xC0 | UInt8(truncatingIfNeeded: scalar >> 6))
            scratch.append(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
        case 0x800..<0x10000:
            scratch.append(0xE0 | UInt8(truncatingIfNeeded: scalar >> 12))
            scratch.append(0x80 | UInt8(truncatingIfNeeded: (scalar >> 6) & 0x3F))
            scratch.append(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
        default:
            scratch.append(0xF0 | UInt8(truncatingIfNeeded: scalar >> 18))
            scratch.append(0x80 | UInt8(truncatingIfNeeded: (scalar >> 12) & 0x3F))
            scratch.append(0x80 | UInt8(truncatingIfNeeded: (scalar >> 6) & 0x3F))
            scratch.append(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
        }
        return next
    }

    /// The four hex digits after the `\u` whose backslash is at `i`.
    func hex4(escapeAt i: Int) throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for k in 2..<6 {
            let at = i &+ k
            guard at < end else { throw JSONError(.unexpectedEnd, at: end) }
            let byte = base[at]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte &- UInt8(ascii: "a") &+ 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte &- UInt8(ascii: "A") &+ 10
            default: throw JSONError(.invalidEscape, at: i)
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}
