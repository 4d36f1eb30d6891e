/// RFC 3339 UTC timestamps written straight into bytes, the one author of the API's format
/// (`2027-03-20T00:00:00.000Z`) and of its whole-second and date-only forms.
///
/// Formatters are slow and allocate; this runs on every response. Instants are given as seconds since 1970 (what
/// `Date.timeIntervalSince1970` holds) and truncated toward the past to the millisecond (`…59.9996` is `…59.999`,
/// `-0.0004 s` is `23:59:59.999` the day before), after snapping to the microsecond so a millisecond value that went
/// through `Double` (Apple's dates) is not pulled one millisecond back by binary rounding. Four-digit years only
/// (RFC 3339 §5.6 `date-fullyear`): instants outside 0000–9999, infinities and NaN are clamped, never trapped on.
public enum RFC3339 {
    /// The earliest instant with a four-digit year: 0000-01-01T00:00:00.000Z, in ms since 1970.
    public static let minMilliseconds: Int64 = -62_167_219_200_000
    /// The latest: 9999-12-31T23:59:59.999Z.
    public static let maxMilliseconds: Int64 = 253_402_300_799_999

    /// Milliseconds since 1970 of an instant, floored and clamped to the four-digit-year range (never traps).
    public static func milliseconds(secondsSince1970 seconds: Double) -> Int64 {
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

    /// Appends the 24 bytes `YYYY-MM-DDTHH:MM:SS.mmmZ` of an instant.
    public static func append(secondsSince1970 seconds: Double, to out: inout [UInt8]) {
        append(milliseconds: milliseconds(secondsSince1970: seconds), fraction: true, to: &out)
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` of an instant.
    public static func string(secondsSince1970 seconds: Double) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        append(secondsSince1970: seconds, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` of milliseconds since 1970 (clamped to 0000–9999).
    public static func string(milliseconds: Int64) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        append(milliseconds: milliseconds, fraction: true, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`: whole seconds, the instant truncated toward the past (for people: sentences, logs).
    public static func wholeSeconds(secondsSince1970 seconds: Double) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(20)
        append(milliseconds: milliseconds(secondsSince1970: seconds), fraction: false, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `YYYY-MM-DD` of the UTC day an instant falls in (RFC 3339 `full-date`).
    public static func day(secondsSince1970 seconds: Double) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        append(milliseconds: milliseconds(secondsSince1970: seconds), fraction: false, to: &out)
        return String(decoding: out.prefix(10), as: UTF8.self)
    }

    private static func append(milliseconds: Int64, fraction: Bool, to out: inout [UInt8]) {
        let ms = min(max(milliseconds, minMilliseconds), maxMilliseconds)
        let msPerDay: Int64 = 86_400_000
        var days = ms / msPerDay
        var rest = ms % msPerDay
        if rest < 0 { rest += msPerDay; days -= 1 }
        let (year, month, day) = GregorianCalendar.civil(daysSince1970: days)
        digits(year, 4, &out)
        out.append(UInt8(ascii: "-"))
        digits(month, 2, &out)
        out.append(UInt8(ascii: "-"))
        digits(day, 2, &out)
        out.append(UInt8(ascii: "T"))
        digits(rest / 3_600_000, 2, &out)
        out.append(UInt8(ascii: ":"))
        digits((rest / 60_000) % 60, 2, &out)
        out.append(UInt8(ascii: ":"))
        digits((rest / 1000) % 60, 2, &out)
        if fraction {
            out.append(UInt8(ascii: "."))
            digits(rest % 1000, 3, &out)
        }
        out.append(UInt8(ascii: "Z"))
    }

    /// `width` decimal digits of a value in 0..<10^width (guaranteed by the clamp above).
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
