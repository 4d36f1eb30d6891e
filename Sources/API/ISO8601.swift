import Foundation

/// ISO 8601 UTC timestamps with milliseconds (`2027-03-20T00:00:00.000Z`), written straight into bytes.
///
/// `DateFormatter` and `ISO8601DateFormatter` are slow and allocate; this runs on every response. Dates are
/// truncated toward the past to the millisecond (`…59.9996` is `…59.999`, `-0.0004 s` is `23:59:59.999` the day
/// before), after snapping to the microsecond so a millisecond value that went through `Double` (Apple's dates)
/// is not pulled one millisecond back by binary rounding.
enum ISO8601 {
    /// The earliest instant with a four-digit year: 0000-01-01T00:00:00.000Z, in ms since 1970.
    static let minMilliseconds: Int64 = -62_167_219_200_000
    /// The latest: 9999-12-31T23:59:59.999Z.
    static let maxMilliseconds: Int64 = 253_402_300_799_999

    /// Milliseconds since 1970 of `date`, floored and clamped to the four-digit-year range (never traps).
    static func milliseconds(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite else { return seconds > 0 ? maxMilliseconds : minMilliseconds }
        // |seconds| ≤ 2.6e11 keeps seconds·1e6 below 2^63 and inside the clamp; beyond it, clamp directly.
        guard seconds > -62_167_219_201, seconds < 253_402_300_801 else {
            return seconds > 0 ? maxMilliseconds : minMilliseconds
        }
        let micros = Int64((seconds * 1_000_000).rounded())
        // Floor division: toward the past also before 1970.
        let ms = micros >= 0 ? micros / 1000 : -((-micros + 999) / 1000)
        return min(max(ms, minMilliseconds), maxMilliseconds)
    }

    /// Appends the 24 bytes of `date` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    static func append(_ date: Date, to out: inout [UInt8]) {
        let ms = milliseconds(date)
        let msPerDay: Int64 = 86_400_000
        var days = ms / msPerDay
        var rest = ms % msPerDay
        if rest < 0 { rest += msPerDay; days -= 1 }
        let (year, month, day) = civil(daysSince1970: days)
        let hour = rest / 3_600_000
        let minute = (rest / 60_000) % 60
        let second = (rest / 1000) % 60
        let milli = rest % 1000
        digits(year, 4, &out)
        out.append(UInt8(ascii: "-"))
        digits(month, 2, &out)
        out.append(UInt8(ascii: "-"))
        digits(day, 2, &out)
        out.append(UInt8(ascii: "T"))
        digits(hour, 2, &out)
        out.append(UInt8(ascii: ":"))
        digits(minute, 2, &out)
        out.append(UInt8(ascii: ":"))
        digits(second, 2, &out)
        out.append(UInt8(ascii: "."))
        digits(milli, 3, &out)
        out.append(UInt8(ascii: "Z"))
    }

    /// `date` as a string (tests, logs).
    static func string(_ date: Date) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        append(date, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Proleptic Gregorian (year, month, day) of a day count since 1970-01-01.
    ///
    /// Howard Hinnant's `civil_from_days`: eras of 400 years (146 097 days) make the leap rules arithmetic.
    /// Inputs are clamped by `milliseconds`, so nothing here can overflow.
    static func civil(daysSince1970: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = daysSince1970 + 719_468
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

    private static func digits(_ value: Int64, _ width: Int, _ out: inout [UInt8]) {
        var divisor: Int64 = 1
        for _ in 1..<width { divisor *= 10 }
        var v = value
        while divisor > 0 {
            out.append(UInt8(truncatingIfNeeded: 48 + (v / divisor) % 10))
            v %= divisor
            divisor /= 10
        }
    }
}
