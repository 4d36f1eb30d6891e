@testable import API
import Foundation
import XCTest

final class FormattingTests: XCTestCase {
    func testISO8601Table() {
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
            XCTAssertEqual(ISO8601.string(Date(timeIntervalSince1970: seconds)), expected, "\(seconds)")
        }
    }

    func testAppleMillisecondsSurviveDoubleRoundTrip() {
        // Apple dates are integer milliseconds; converting through Double must never lose one.
        var ms: Int64 = 1_700_000_000_000
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for _ in 0..<2000 {
            ms += 1_234_567
            let date = Date(timeIntervalSince1970: Double(ms) / 1000)
            XCTAssertEqual(ISO8601.milliseconds(date), ms)
            XCTAssertEqual(ISO8601.string(date), formatter.string(from: date))
        }
    }

    func testDaysFor400YearsMatchFoundation() {
        // From 1583 on: Foundation's Gregorian calendar switches to Julian before the 1582 reform, ISO 8601 doesn't.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        for day in stride(from: Int64(-141_000), to: 146_097, by: 97) {
            let date = Date(timeIntervalSince1970: Double(day) * 86_400)
            let c = calendar.dateComponents([.year, .month, .day], from: date)
            let civil = ISO8601.civil(daysSince1970: day)
            XCTAssertEqual([civil.year, civil.month, civil.day], [c.year, c.month, c.day].map { Int64($0 ?? -1) }, "\(day)")
        }
    }

    func testJSONStringEscaping() {
        var body = JSONBody()
        body.string("a\"b\\c\n\t\r\u{01}\u{1f}é😀/")
        XCTAssertEqual(String(decoding: body.bytes, as: UTF8.self), #""a\"b\\c\n\t\r\u0001\u001fé😀/""#)
    }

    func testContentTypeClassifier() {
        XCTAssertEqual(RequestBody.mediaType("application/json"), .json)
        XCTAssertEqual(RequestBody.mediaType("APPLICATION/JSON;charset=utf-8"), .json)
        XCTAssertEqual(RequestBody.mediaType("application/json ; charset=utf-8"), .json)
        XCTAssertEqual(RequestBody.mediaType(" application/merge-patch+json"), .json)
        XCTAssertEqual(RequestBody.mediaType("application/vnd.api+JSON; charset=utf-8"), .json)
        XCTAssertEqual(RequestBody.mediaType("application/+json"), .other, "a +json suffix needs a type name")
        XCTAssertEqual(RequestBody.mediaType("application/jsonp"), .other)
        XCTAssertEqual(RequestBody.mediaType("application/js"), .other)
        XCTAssertEqual(RequestBody.mediaType("text/json"), .other)
        XCTAssertEqual(RequestBody.mediaType("text/plain"), .other)
        XCTAssertEqual(RequestBody.mediaType("application/x-www-form-urlencoded"), .formURLEncoded)
        XCTAssertEqual(RequestBody.mediaType("Application/X-WWW-Form-Urlencoded; charset=UTF-8"), .formURLEncoded)
        XCTAssertEqual(RequestBody.mediaType(nil), .absent)
    }

    func testNULScan() {
        XCTAssertFalse(FieldValidator.containsNUL(""))
        XCTAssertFalse(FieldValidator.containsNUL(String(repeating: "eyJhbGciOi", count: 400)))
        XCTAssertTrue(FieldValidator.containsNUL("\u{0}"))
        XCTAssertTrue(FieldValidator.containsNUL(String(repeating: "a", count: 4000) + "\u{0}"))
        XCTAssertTrue(FieldValidator.containsNUL("é\u{0}🙂"))
        let bridged = NSString(string: "ab\u{0}c") as String   // not necessarily native UTF-8
        XCTAssertTrue(FieldValidator.containsNUL(bridged))
        XCTAssertFalse(FieldValidator.containsNUL(NSString(string: "abc") as String))
    }

    func testBearerParsing() {
        XCTAssertEqual(KeyAuth.bearerToken("Bearer abc"), "abc")
        XCTAssertEqual(KeyAuth.bearerToken("BEARER   abc  "), "abc")
        XCTAssertNil(KeyAuth.bearerToken("Bearer"))
        XCTAssertNil(KeyAuth.bearerToken("Bearer "))
        XCTAssertNil(KeyAuth.bearerToken("Bearerabc"))
        XCTAssertNil(KeyAuth.bearerToken("Bearer a b"))
        XCTAssertNil(KeyAuth.bearerToken("Basic abc"))
    }

    func testJWSShape() {
        XCTAssertTrue(ReceiptsController.hasThreeParts("a.b.c"))
        XCTAssertFalse(ReceiptsController.hasThreeParts(""))
        XCTAssertFalse(ReceiptsController.hasThreeParts(".."))
        for bad in ["abc", "a.b", "a.b.c.d", ".b.c", "a..c", "a.b.", "a.b.c.", "a.b..", "."] {
            XCTAssertFalse(ReceiptsController.hasThreeParts(bad), bad)
        }
        let long = String(repeating: "x", count: 3_000)
        XCTAssertTrue(ReceiptsController.hasThreeParts(long + "." + long + ".s"))
        XCTAssertTrue(ReceiptsController.hasThreeParts("é.🙂.c"))
    }
}
