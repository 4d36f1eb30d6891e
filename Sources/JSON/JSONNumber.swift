/// A JSON number kept as its exact source text, converted on demand.
///
/// Keeping the literal makes parse → serialize lossless (`1759302518835`, `1.50`, `1e3` come back
/// byte-for-byte) and defers the cost of conversion to the fields a caller actually reads.
/// Equality compares the literal text: `1.0` and `1` are different literals; compare
/// `int64Value`/`doubleValue` for numeric equality.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number exactly as written, always valid RFC 8259 §6 grammar.
    public let literal: String

    /// Trusted constructor for text the parser has already validated.
    init(uncheckedLiteral: String) { self.literal = uncheckedLiteral }

    /// Wraps `literal` if it is a valid JSON number (no surrounding whitespace), else `nil`.
    public init?(literal: String) {
        var text = literal
        let valid = text.withUTF8 { buffer -> Bool in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return false }
            switch NumberGrammar.scan(base, from: 0, end: buffer.count) {
            case .success(let stop): return stop == buffer.count
            case .failure: return false
            }
        }
        guard valid else { return nil }
        self.literal = literal
    }

    /// An integer number.
    public init(_ value: Int64) { self.literal = String(value) }

    /// An integer number.
    public init(_ value: Int) { self.literal = String(value) }

    /// A floating-point number in Swift's shortest round-tripping form (`0.1`, `5.0`, `1e-05`);
    /// `nil` for NaN and infinities, which JSON cannot represent.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        self.init(literal: value.description)
    }

    /// The literal text.
    public var description: String { literal }

    /// The value as an `Int64` if it is *exactly* an integer in range, else `nil`.
    ///
    /// Mathematical, not lexical: `1.0`, `1.5e3` and `-0` are integers (1, 1500, 0); `1.5` and
    /// `1e-3` are not; `9223372036854775808` overflows. Never traps, whatever the digit count or
    /// exponent.
    public var int64Value: Int64? { integer(truncating: false) }

    /// The value as milliseconds for Apple date fields (`signedDate`, `expiresDate`, …): an
    /// integral value as is, a fractional one truncated toward zero (`1759302518835.9` →
    /// `1759302518835`, `-1.5` → `-1`); `nil` if out of `Int64` range.
    public var millisecondsValue: Int64? { integer(truncating: true) }

    /// The nearest `Double` (IEEE round-to-nearest), or `nil` if the magnitude overflows to
    /// infinity. Tiny values underflow to ±0 as usual.
    public var doubleValue: Double? {
        guard let value = Double(literal), value.isFinite else { return nil }
        return value
    }

    /// Shared integer conversion. The literal is `sign · D · 10^scale` where `D` is the digit
    /// string of integer and fraction parts; trailing zeros of `D` move into `scale`, so the value
    /// is integral iff `scale >= 0` after that.
    private func integer(truncating: Bool) -> Int64? {
        var text = literal
        return text.withUTF8 { buffer -> Int64? in
            let digitZero = UInt8(ascii: "0")
            var i = 0
            let n = buffer.count
            let negative = n > 0 && buffer[0] == UInt8(ascii: "-")
            if negative { i = 1 }
            let intStart = i
            while i < n, buffer[i] &- digitZero < 10 { i += 1 }
            let intEnd = i
            var fracStart = i, fracEnd = i
            if i < n, buffer[i] == UInt8(ascii: ".") {
                i += 1
                fracStart = i
                while i < n, buffer[i] &- digitZero < 10 { i += 1 }
                fracEnd = i
            }
            // Exponent, saturated far beyond anything that could fit in Int64, so no overflow.
            var exponent = 0
            if i < n, buffer[i] | 0x20 == UInt8(ascii: "e") {
                i += 1
                var expNegative = false
                if i < n, buffer[i] == UInt8(ascii: "-") { expNegative = true; i += 1 }
                else if i < n, buffer[i] == UInt8(ascii: "+") { i += 1 }
                while i < n, buffer[i] &- digitZero < 10 {
                    if exponent < 1_000_000_000 { exponent = exponent * 10 + Int(buffer[i] &- digitZero) }
                    i += 1
                }
                if expNegative { exponent = -exponent }
            }
            let intCount = intEnd - intStart
            let total = intCount + (fracEnd - fracStart)
            // Virtual digit k of D (integer digits then fraction digits).
            func digit(_ k: Int) -> UInt8 {
                k < intCount ? buffer[intStart + k] &- digitZero : buffer[fracStart + k - intCount] &- digitZero
            }
            var first = 0
            while first < total, digit(first) == 0 { first += 1 }
            if first == total { return 0 }  // every digit zero: the value is 0 whatever the exponent
            var last = total  // exclusive
            while digit(last - 1) == 0 { last -= 1 }
            let scale = exponent - (fracEnd - fracStart) + (total - last)
            var stop = last
            var zerosToAppend = 0
            if scale < 0 {
                guard truncating else { return nil }
                stop = last + scale  // drop the fractional digits
                if stop <= first { return 0 }
            } else {
                zerosToAppend = scale
            }
            // More than 19 significant digits can never fit (Int64 has 19 digits).
            guard (stop - first) + zerosToAppend <= 19 else { return nil }
            var magnitude: UInt64 = 0
            for k in first..<stop { magnitude = magnitude * 10 + UInt64(digit(k)) }
            for _ in 0..<zerosToAppend {
                let (product, overflow) = magnitude.multipliedReportingOverflow(by: 10)
                if overflow { return nil }
                magnitude = product
            }
            if negative {
                if magnitude == UInt64(1) << 63 { return Int64.min }
                guard magnitude < UInt64(1) << 63 else { return nil }
                return -Int64(magnitude)
            }
            guard magnitude <= UInt64(Int64.max) else { return nil }
            return Int64(magnitude)
        }
    }
}

/// The RFC 8259 §6 number grammar, shared by the parser and `JSONNumber(literal:)`:
/// `-? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?`.
enum NumberGrammar {
    /// Scans a number starting at `start` (caller guarantees `start < end`); returns the index
    /// after it. Stops at the first byte that cannot continue the number; the caller decides
    /// whether that byte is allowed there.
    @inline(__always)
    static func scan(_ base: UnsafePointer<UInt8>, from start: Int, end: Int) -> Result<Int, JSONError> {
        let zero = UInt8(ascii: "0")
        var i = start
        if base[i] == UInt8(ascii: "-") {
            i &+= 1
            guard i < end else { return .failure(JSONError(.unexpectedEnd, at: i)) }
        }
        let first = base[i]
        if first == zero {
            i &+= 1
            // RFC 8259 §6: leading zeros are not allowed.
            if i < end, base[i] &- zero < 10 { return .failure(JSONError(.invalidNumber, at: i)) }
        } else if first &- zero < 10 {
            i &+= 1
            while i < end, base[i] &- zero < 10 { i &+= 1 }
        } else {
            return .failure(JSONError(.invalidNumber, at: i))
        }
        if i < end, base[i] == UInt8(ascii: ".") {
            i &+= 1
            guard i < end else { return .failure(JSONError(.unexpectedEnd, at: i)) }
            guard base[i] &- zero < 10 else { return .failure(JSONError(.invalidNumber, at: i)) }
            while i < end, base[i] &- zero < 10 { i &+= 1 }
        }
        if i < end, base[i] | 0x20 == UInt8(ascii: "e") {
            i &+= 1
            if i < end, base[i] == UInt8(ascii: "+") || base[i] == UInt8(ascii: "-") { i &+= 1 }
            guard i < end else { return .failure(JSONError(.unexpectedEnd, at: i)) }
            guard base[i] &- zero < 10 else { return .failure(JSONError(.invalidNumber, at: i)) }
            while i < end, base[i] &- zero < 10 { i &+= 1 }
        }
        return .success(i)
    }
}
