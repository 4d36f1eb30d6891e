/// Proleptic Gregorian calendar arithmetic on day counts since 1970-01-01 (the ISO 8601 / RFC 3339 calendar: the
/// Gregorian leap rules extended to every year, year 0 = 1 BC), the one author of the codebase.
///
/// Howard Hinnant's `days_from_civil` / `civil_from_days` ("chrono-compatible low-level date algorithms"): eras of
/// 400 years (146 097 days) make the leap rules arithmetic. Never traps: inputs outside the documented ranges are
/// clamped to them first (callers validate their dates before asking; a clamp only keeps a bad caller from crashing
/// the process).
public enum GregorianCalendar {
    /// The years the arithmetic covers: far beyond any date we handle, small enough that no product overflows.
    public static let yearRange: ClosedRange<Int64> = -1_000_000_000...1_000_000_000
    /// The day counts `civil(daysSince1970:)` covers (those of `yearRange`).
    public static let dayRange: ClosedRange<Int64> = -365_243_219_528...365_241_780_837

    /// Whether `year` has a February 29th: divisible by 4, except centuries not divisible by 400.
    public static func isLeapYear(_ year: Int64) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    /// The number of days of `month` (1–12) in `year`; 0 for a month outside 1–12.
    public static func daysInMonth(_ month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        case 1, 3, 5, 7, 8, 10, 12: return 31
        default: return 0
        }
    }

    /// Whether year-month-day names a day of the calendar (month 1–12, day 1 to the month's length).
    public static func isValid(year: Int64, month: Int64, day: Int64) -> Bool {
        day >= 1 && day <= daysInMonth(month, year: year)
    }

    /// Days since 1970-01-01 of a valid date (`days_from_civil`). Year clamped to `yearRange`, month to 1–12,
    /// day to 1–31.
    public static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let year = min(max(year, yearRange.lowerBound), yearRange.upperBound)
        let month = min(max(month, 1), 12)
        let day = min(max(day, 1), 31)
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// (year, month, day) of a day count since 1970-01-01 (`civil_from_days`), clamped to `dayRange`.
    public static func civil(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = min(max(days, dayRange.lowerBound), dayRange.upperBound) + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }
}
