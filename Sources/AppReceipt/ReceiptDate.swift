public import Foundation
import Primitives

/// A receipt date: an IA5String in RFC 3339 UTC form, `2020-05-06T18:28:49Z` or with milliseconds
/// `2020-05-06T18:28:49.123Z` (Xcode receipts). Nothing else is accepted: no offsets, no other precisions.
public struct ReceiptDate: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Milliseconds since the Unix epoch (the unit of every other date in Bouncer).
    public let milliseconds: Int64
    /// The text exactly as the receipt carries it.
    public let text: String

    /// The instant as a `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
    /// The receipt's text.
    public var description: String { text }
    /// Orders by instant.
    public static func < (lhs: ReceiptDate, rhs: ReceiptDate) -> Bool { lhs.milliseconds < rhs.milliseconds }

    /// Parses the two accepted forms; nil for anything else (including impossible dates like 02-30).
    public init?(_ text: String) {
        let b = Array(text.utf8)
        guard b.count == 20 || b.count == 24 else { return nil }
        func digits(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let byte = b[index]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
              b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"), b[b.count - 1] == UInt8(ascii: "Z"),
              let year = digits(0..<4), let month = digits(5..<7), let day = digits(8..<10),
              let hour = digits(11..<13), let minute = digits(14..<16), let second = digits(17..<19)
        else { return nil }
        var millis = 0
        if b.count == 24 {
            guard b[19] == UInt8(ascii: "."), let fraction = digits(20..<23) else { return nil }
            millis = fraction
        }
        guard GregorianCalendar.isValid(year: Int64(year), month: Int64(month), day: Int64(day)),
              hour <= 23, minute <= 59, second <= 59 else { return nil }
        // Four-digit years and these bounds keep every product far inside Int64.
        let days = GregorianCalendar.daysSince1970(year: Int64(year), month: Int64(month), day: Int64(day))
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
        milliseconds = seconds * 1000 + Int64(millis)
        self.text = text
    }
}
