import Primitives

/// HTTP-date (RFC 9110 §5.6.7) to seconds since 1970, without a formatter or the C library's time zone state.
///
/// A recipient must accept all three forms: IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, the obsolete RFC 850
/// `Sunday, 06-Nov-94 08:49:37 GMT` and asctime `Sun Nov  6 08:49:37 1994`. The weekday is not checked (it adds
/// nothing a sender can get right that the date does not already say). A day the month does not have (30 Feb) is
/// no date: refused, not rolled over into the next month.
enum HTTPDate {
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Seconds since 1970-01-01T00:00:00Z, or nil when `text` is none of the three forms.
    static func parse(_ text: String) -> Int64? {
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "-" }).map(String.init)
        let day: Int, month: Int, year: Int, clock: String
        switch tokens.count {
        case 6 where tokens[5] == "GMT":   // IMF-fixdate or RFC 850: weekday day month year time GMT
            guard let d = Int(tokens[1]), let m = months.firstIndex(of: tokens[2]), var y = Int(tokens[3]),
                  tokens[1].count == 2 else { return nil }
            if tokens[3].count == 2 {
                // RFC 850's two-digit year: RFC 9110 says a year more than 50 years ahead is in the past century;
                // against "now" that is 1950...2049 until 2049 (the obsolete form is long gone by then).
                y += y < 50 ? 2000 : 1900
            } else if tokens[3].count != 4 { return nil }
            (day, month, year, clock) = (d, m + 1, y, tokens[4])
        case 5:   // asctime: weekday month day time year
            guard let m = months.firstIndex(of: tokens[1]), let d = Int(tokens[2]), let y = Int(tokens[4]),
                  tokens[4].count == 4 else { return nil }
            (day, month, year, clock) = (d, m + 1, y, tokens[3])
        default:
            return nil
        }
        let parts = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ $0.count == 2 }),
              let hour = Int(parts[0]), let minute = Int(parts[1]), let second = Int(parts[2]),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
              (1...9999).contains(year),
              GregorianCalendar.isValid(year: Int64(year), month: Int64(month), day: Int64(day)) else { return nil }
        let days = GregorianCalendar.daysSince1970(year: Int64(year), month: Int64(month), day: Int64(day))
        return days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }
}
