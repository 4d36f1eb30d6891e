import Foundation
import Primitives
import XCTest

final class CalendarTests: XCTestCase {
    // Moved from APITests.FormattingTests (API's ISO8601, now RFC3339).
    func testRFC3339Table() {
        let table: [(Double, String)] = [
            (0, "1970-01-01T00:00:00.000Z"),
            (1_805_500_800, "2027-03-20T00:00:00.000Z"),
            (1_805_500_800.123, "2027-03-20T00:00:00.123Z"),
            (1_805_500_800.9999, "2027-03-20T00:00:00.999Z"),  // rounds down to the millisecond
            (0.0005, "1970-01-01T00:00:00.000Z"),
            (-0.001, "1969-12-31T23:59:59.999Z"),
            (-0.0005, "1969-12-31T23:59:59.999Z"),  // floor, toward the past
            (-86_400, "1969-12-31T00:00:00.000Z"),
            (951_782_400, "2000-02-29T00:00:00.000Z"),  // leap day of a 400-year leap year
            (4_107_542_400, "2100-03-01T00:00:00.000Z"),  // 2100 is not a leap year
            (1_709_251_199.999, "2024-02-29T23:59:59.999Z"),
            (-2_208_988_800, "1900-01-01T00:00:00.000Z"),
            (-62_135_596_800, "0001-01-01T00:00:00.000Z"),
            (253_402_300_799.999, "9999-12-31T23:59:59.999Z"),
            (1e15, "9999-12-31T23:59:59.999Z"),  // clamped, never traps
            (-1e15, "0000-01-01T00:00:00.000Z"),
            (.infinity, "9999-12-31T23:59:59.999Z"),
            (-.infinity, "0000-01-01T00:00:00.000Z"),
            (.nan, "0000-01-01T00:00:00.000Z"),
        ]
        for (seconds, expected) in table {
            XCTAssertEqual(RFC3339.string(secondsSince1970: seconds), expected, "\(seconds)")
            var bytes: [UInt8] = [0x2A]
            RFC3339.append(secondsSince1970: seconds, to: &bytes)
            XCTAssertEqual(String(decoding: bytes, as: UTF8.self), "*" + expected)
            XCTAssertEqual(RFC3339.wholeSeconds(secondsSince1970: seconds), String(expected.prefix(19)) + "Z")
            XCTAssertEqual(RFC3339.day(secondsSince1970: seconds), String(expected.prefix(10)))
        }
        XCTAssertEqual(RFC3339.string(milliseconds: 0), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(RFC3339.string(milliseconds: -1), "1969-12-31T23:59:59.999Z")
        XCTAssertEqual(RFC3339.string(milliseconds: .max), "9999-12-31T23:59:59.999Z")
        XCTAssertEqual(RFC3339.string(milliseconds: .min), "0000-01-01T00:00:00.000Z")
    }

    // Moved from APITests.FormattingTests.
    func testAppleMillisecondsSurviveDoubleRoundTrip() {
        // Apple dates are integer milliseconds; converting through Double must never lose one.
        var ms: Int64 = 1_700_000_000_000
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for _ in 0..<2000 {
            ms += 1_234_567
            let date = Date(timeIntervalSince1970: Double(ms) / 1000)
            XCTAssertEqual(RFC3339.milliseconds(secondsSince1970: date.timeIntervalSince1970), ms)
            XCTAssertEqual(RFC3339.string(secondsSince1970: date.timeIntervalSince1970), formatter.string(from: date))
            XCTAssertEqual(RFC3339.string(milliseconds: ms), formatter.string(from: date))
        }
    }

    // Moved from APITests.FormattingTests.
    func testDaysFor400YearsMatchFoundation() {
        // From 1583 on: Foundation's Gregorian calendar switches to Julian before the 1582 reform, ISO 8601 doesn't.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        for day in stride(from: Int64(-141_000), to: 146_097, by: 97) {
            let date = Date(timeIntervalSince1970: Double(day) * 86_400)
            let c = calendar.dateComponents([.year, .month, .day], from: date)
            let civil = GregorianCalendar.civil(daysSince1970: day)
            XCTAssertEqual([civil.year, civil.month, civil.day], [c.year, c.month, c.day].map { Int64($0 ?? -1) }, "\(day)")
            XCTAssertEqual(GregorianCalendar.daysSince1970(year: civil.year, month: civil.month, day: civil.day), day)
        }
    }

    func testDaysSince1970Table() {
        // The cases the former copies were tested on (HTTPClient's HTTPDate, AppReceipt's ReceiptDate, API's parseDay).
        let table: [(Int64, Int64, Int64, Int64)] = [
            (1970, 1, 1, 0), (1970, 1, 2, 1), (1969, 12, 31, -1), (2000, 3, 1, 11_017), (2024, 2, 29, 19_782),
            (2026, 11, 24, 20_781), (1994, 11, 6, 9_075), (2020, 5, 6, 18_388), (4001, 1, 1, 741_808),
            (1, 1, 1, -719_162), (0, 1, 1, -719_528), (0, 2, 29, -719_469), (-1, 12, 31, -719_529),
            (-400, 3, 1, -865_565), (9999, 12, 31, 2_932_896), (2100, 2, 28, 47_540), (2100, 3, 1, 47_541),
        ]
        for (y, m, d, days) in table {
            XCTAssertEqual(GregorianCalendar.daysSince1970(year: y, month: m, day: d), days, "\(y)-\(m)-\(d)")
            let civil = GregorianCalendar.civil(daysSince1970: days)
            XCTAssertEqual([civil.year, civil.month, civil.day], [y, m, d], "\(days)")
        }
    }

    func testLeapYearsAndMonthLengths() {
        for (year, leap) in [(2000, true), (1900, false), (2100, false), (2024, true), (2023, false), (0, true),
                             (-4, true), (-100, false), (-400, true), (1_000_000_000, true)] as [(Int64, Bool)] {
            XCTAssertEqual(GregorianCalendar.isLeapYear(year), leap, "\(year)")
            XCTAssertEqual(GregorianCalendar.daysInMonth(2, year: year), leap ? 29 : 28)
            XCTAssertEqual(GregorianCalendar.isValid(year: year, month: 2, day: 29), leap)
        }
        XCTAssertEqual((1...12).map { GregorianCalendar.daysInMonth($0, year: 2023) },
                       [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
        for (month, day) in [(0, 1), (13, 1), (4, 31), (1, 0), (1, 32), (-1, 1)] as [(Int64, Int64)] {
            XCTAssertFalse(GregorianCalendar.isValid(year: 2026, month: month, day: day), "\(month)-\(day)")
        }
    }

    func testYearBoundaries() {
        for year in [Int64(1969), 1999, 2000, 2099, 2100, 9998] {
            let last = GregorianCalendar.daysSince1970(year: year, month: 12, day: 31)
            XCTAssertEqual(GregorianCalendar.daysSince1970(year: year + 1, month: 1, day: 1), last + 1)
            let next = GregorianCalendar.civil(daysSince1970: last + 1)
            XCTAssertEqual([next.year, next.month, next.day], [year + 1, 1, 1])
            XCTAssertEqual(GregorianCalendar.daysSince1970(year: year + 1, month: 1, day: 1)
                           - GregorianCalendar.daysSince1970(year: year, month: 1, day: 1),
                           GregorianCalendar.isLeapYear(year) ? 366 : 365)
        }
    }

    func testHugeAndNegativeInputsClampWithoutTrapping() {
        let low = GregorianCalendar.daysSince1970(year: .min, month: .min, day: .min)
        XCTAssertEqual(low, GregorianCalendar.dayRange.lowerBound)
        XCTAssertEqual(GregorianCalendar.daysSince1970(year: .max, month: .max, day: .max), GregorianCalendar.dayRange.upperBound)
        let first = GregorianCalendar.civil(daysSince1970: .min)
        XCTAssertEqual([first.year, first.month, first.day], [-1_000_000_000, 1, 1])
        let last = GregorianCalendar.civil(daysSince1970: .max)
        XCTAssertEqual([last.year, last.month, last.day], [1_000_000_000, 12, 31])
        XCTAssertEqual(RFC3339.milliseconds(secondsSince1970: -.greatestFiniteMagnitude), RFC3339.minMilliseconds)
        XCTAssertEqual(RFC3339.milliseconds(secondsSince1970: .greatestFiniteMagnitude), RFC3339.maxMilliseconds)
    }

    /// The instants on which the former copies disagreed, and the one answer each now gets.
    ///
    /// Before: `API/ISO8601` snapped to the microsecond then floored; `Domain`'s timeline text and `Storage`'s
    /// `ISO8601Day` floored the raw `Double` (so an Apple millisecond stored as `x.999999999…` printed one second or
    /// one day early), `ISO8601Day` trapped on an infinite or NaN instant and wrote a negative year as `00-1`; the
    /// timeline clamped at year 0001 where the API clamps at 0000 (both are RFC 3339 `date-fullyear`s: the timeline
    /// keeps its own clamp). Reference: RFC 3339 §5.6 and the proleptic Gregorian calendar (ISO 8601 §4.3.2.1).
    func testFormerDisagreements() {
        let justBeforeMidnight = Double(1_805_500_800_000) / 1000 - 1e-7   // 2027-03-20T00:00:00.000 through Double noise
        XCTAssertEqual(RFC3339.string(secondsSince1970: justBeforeMidnight), "2027-03-20T00:00:00.000Z")
        XCTAssertEqual(RFC3339.wholeSeconds(secondsSince1970: justBeforeMidnight), "2027-03-20T00:00:00Z",
                       "was 2027-03-19T23:59:59Z in the timeline")
        XCTAssertEqual(RFC3339.day(secondsSince1970: justBeforeMidnight), "2027-03-20", "was 2027-03-19 in the overview")
        XCTAssertEqual(RFC3339.day(secondsSince1970: .infinity), "9999-12-31", "trapped")
        XCTAssertEqual(RFC3339.day(secondsSince1970: .nan), "0000-01-01", "trapped")
        XCTAssertEqual(RFC3339.day(secondsSince1970: -62_167_219_200), "0000-01-01")
        XCTAssertEqual(RFC3339.day(secondsSince1970: -62_167_219_201), "0000-01-01", "was 00-1-12-31")
    }
}
