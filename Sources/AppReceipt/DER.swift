import Primitives

/// A minimal, hostile-input-safe DER reader (X.690 §8, §10): reads one TLV at a time from a byte range, so nesting
/// costs no stack (the receipt schema decides how deep to descend, never the input).
///
/// Rules: low-tag-number form only (tags 0–30), definite lengths only (an indefinite length, `0x80`, is BER, not
/// DER), lengths in minimal form and at most 4 length octets, and every length checked against the bytes that
/// remain before any slice is taken. Every failure is a `DERError`; no input traps.
struct DERReader {
    /// The whole buffer; `position` and `end` bound the part this reader may see.
    let bytes: [UInt8]
    private(set) var position: Int
    let end: Int

    /// Reads `bytes[range]`; the range must lie inside `bytes` (callers pass a `DERElement.content`).
    init(_ bytes: [UInt8], range: Range<Int>? = nil) {
        self.bytes = bytes
        let bounded = range.map { $0.clamped(to: 0..<bytes.count) } ?? 0..<bytes.count
        position = bounded.lowerBound
        end = bounded.upperBound
    }

    /// Whether every byte of the range has been read.
    var isAtEnd: Bool { position >= end }

    /// Reads the next element (tag, length, content range) and advances past it.
    mutating func next() throws(DERError) -> DERElement {
        guard position < end else { throw DERError("unexpected end of data") }
        let tag = bytes[position]
        guard tag & 0x1F != 0x1F else { throw DERError("high-tag-number form is not used by receipts") }
        var cursor = position + 1
        guard cursor < end else { throw DERError("truncated length") }
        let first = bytes[cursor]
        cursor += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let octets = Int(first & 0x7F)
            guard octets != 0 else { throw DERError("indefinite length (BER) is not DER") }
            guard octets <= 4 else { throw DERError("length of \(octets) octets is too large") }
            guard octets <= end - cursor else { throw DERError("truncated length") }
            guard bytes[cursor] != 0 else { throw DERError("non-minimal length encoding") }
            for _ in 0..<octets {
                length = (length << 8) | Int(bytes[cursor])   // ≤ 4 octets: fits Int on every 64-bit platform
                cursor += 1
            }
            guard length >= 0x80 else { throw DERError("non-minimal length encoding") }
        }
        guard length <= end - cursor else { throw DERError("length \(length) exceeds the \(end - cursor) remaining bytes") }
        position = cursor + length
        return DERElement(tag: tag, content: cursor..<(cursor + length))
    }

    /// Reads the next element and requires `tag`.
    mutating func next(tag: UInt8, _ what: @autoclosure () -> String) throws(DERError) -> DERElement {
        let element = try next()
        // `what` is an autoclosure: building the message costs only on failure (this runs per attribute).
        guard element.tag == tag else { throw DERError("\(what()): expected tag 0x\(Hex.encode([tag], uppercase: true)), found 0x\(Hex.encode([element.tag], uppercase: true))") }
        return element
    }

    /// A reader over `element`'s content.
    func reader(for element: DERElement) -> DERReader { DERReader(bytes, range: element.content) }

    /// The content bytes of `element`.
    func content(of element: DERElement) -> ArraySlice<UInt8> { bytes[element.content] }

    /// `element`'s INTEGER value, which must fit in 64 bits and be minimally encoded.
    func integer(_ element: DERElement) throws(DERError) -> Int64 {
        guard element.tag == DERTag.integer else { throw DERError("expected INTEGER, found tag 0x\(Hex.encode([element.tag], uppercase: true))") }
        let value = content(of: element)
        guard !value.isEmpty else { throw DERError("empty INTEGER") }
        guard value.count <= 8 else { throw DERError("INTEGER wider than 64 bits") }
        if value.count > 1, let first = value.first, let second = value.dropFirst().first {
            // X.690 §8.3.2: the first nine bits must not be all zeros or all ones.
            guard !(first == 0x00 && second & 0x80 == 0), !(first == 0xFF && second & 0x80 != 0) else {
                throw DERError("non-minimal INTEGER encoding")
            }
        }
        var result: UInt64 = (value.first ?? 0) & 0x80 != 0 ? UInt64.max : 0   // sign extension
        for byte in value { result = (result << 8) | UInt64(byte) }
        return Int64(bitPattern: result)
    }

    /// `element`'s string value: UTF8String (validated UTF-8) or IA5String (ASCII).
    func string(_ element: DERElement) throws(DERError) -> String {
        let value = content(of: element)
        switch element.tag {
        case DERTag.utf8String:
            // Through a buffer pointer: the contiguous fast path of UTF-8 validation (a generic sequence is much slower).
            guard let text = value.withUnsafeBufferPointer({ String(validating: $0, as: UTF8.self) }) else {
                throw DERError("UTF8String is not valid UTF-8")
            }
            return text
        case DERTag.ia5String:
            guard value.allSatisfy({ $0 < 0x80 }) else { throw DERError("IA5String holds a non-ASCII byte") }
            return value.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
        default:
            throw DERError("expected UTF8String or IA5String, found tag 0x\(Hex.encode([element.tag], uppercase: true))")
        }
    }
}

/// One TLV: its identifier octet and where its content lies in the reader's buffer.
struct DERElement: Sendable, Equatable {
    /// The identifier octet (class, constructed bit, tag number).
    var tag: UInt8
    /// The content octets' range in the buffer.
    var content: Range<Int>
}

/// The universal tags receipts use.
enum DERTag {
    static let integer: UInt8 = 0x02
    static let octetString: UInt8 = 0x04
    static let utf8String: UInt8 = 0x0C
    static let ia5String: UInt8 = 0x16
    static let sequence: UInt8 = 0x30
    static let set: UInt8 = 0x31
}

/// Malformed DER; `reason` is safe to show.
struct DERError: Error, Sendable, CustomStringConvertible {
    var reason: String
    /// The receipt field at fault, under verifyReceipt's JSON names (`in_app[3].expires_date`), when one is.
    var field: String?
    init(_ reason: String, field: String? = nil) {
        self.reason = reason
        self.field = field
    }
    var description: String { reason }
}
