import Foundation

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
        guard (1...12).contains(month), day >= 1, day <= Self.daysIn(month: month, year: year),
              hour <= 23, minute <= 59, second <= 59 else { return nil }
        // Four-digit years and these bounds keep every product far inside Int64.
        let days = Int64(Self.daysFromCivil(year: year, month: month, day: day))
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
        milliseconds = seconds * 1000 + Int64(millis)
        self.text = text
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's days_from_civil).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
