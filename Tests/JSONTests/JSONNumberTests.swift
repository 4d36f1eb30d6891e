import XCTest
@testable import JSON

final class JSONNumberTests: XCTestCase {
    private func number(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> JSONNumber {
        try XCTUnwrap(JSONParser.parse(text).numberValue, file: file, line: line)
    }

    func testLiteralIsKeptByteForByte() throws {
        for text in ["0", "-0", "1759302518835", "1.50", "1e3", "1E+03", "-0.0e-0", "123456789012345678901234567890"] {
            XCTAssertEqual(try number(text).literal, text)
            XCTAssertEqual(try JSONParser.parse(text).serializedString(), text)
        }
    }

    func testInt64ValueIsExactIntegersOnly() throws {
        let cases: [(String, Int64?, UInt)] = [
            ("0", 0, #line), ("-0", 0, #line), ("42", 42, #line), ("-42", -42, #line),
            ("1759302518835", 1_759_302_518_835, #line),
            ("9223372036854775807", .max, #line),
            ("-9223372036854775808", .min, #line),
            ("9223372036854775808", nil, #line),
            ("-9223372036854775809", nil, #line),
            ("18446744073709551616", nil, #line),
            ("123456789012345678901234567890", nil, #line),
            ("1.0", 1, #line), ("1.000", 1, #line), ("-2.50e1", -25, #line), ("1.5e3", 1500, #line),
            ("1e3", 1000, #line), ("1E+3", 1000, #line), ("100e-2", 1, #line), ("0.0", 0, #line),
            ("0e999999999999999999999", 0, #line), ("0.000e-5", 0, #line),
            ("9.223372036854775807e18", .max, #line),
            ("9.223372036854775808e18", nil, #line),
            ("1e18", 1_000_000_000_000_000_000, #line), ("1e19", nil, #line),
            ("1e999999999999999999999", nil, #line),
            ("1.5", nil, #line), ("1e-3", nil, #line), ("-0.5", nil, #line),
            ("1759302518835.5", nil, #line),
            ("0.00000000000000000000000000001", nil, #line),
            ("10000000000000000000000000000e-27", 10, #line), ("10000000000000000000000000000e-28", 1, #line),
        ]
        for (text, expected, line) in cases {
            XCTAssertEqual(try number(text).int64Value, expected, text, line: line)
        }
    }

    func testMillisecondsTruncateTowardZero() throws {
        let cases: [(String, Int64?, UInt)] = [
            ("1759302518835", 1_759_302_518_835, #line),
            ("1759302518835.0", 1_759_302_518_835, #line),
            ("1759302518835.999", 1_759_302_518_835, #line),
            ("-1.5", -1, #line), ("-0.5", 0, #line), ("0.9", 0, #line),
            ("1.7593025188359e12", 1_759_302_518_835, #line),
            ("1.759302518835e12", 1_759_302_518_835, #line),
            ("1e-999999999999", 0, #line),
            ("9223372036854775807.9", .max, #line),
            ("-9223372036854775808.9", .min, #line),
            ("9223372036854775808.1", nil, #line),
            ("1e19", nil, #line),
        ]
        for (text, expected, line) in cases {
            XCTAssertEqual(try number(text).millisecondsValue, expected, text, line: line)
        }
    }

    func testDoubleValue() throws {
        XCTAssertEqual(try number("0.1").doubleValue, 0.1)
        XCTAssertEqual(try number("-2.5E-3").doubleValue, -0.0025)
        XCTAssertEqual(try number("1759302518835").doubleValue, 1_759_302_518_835)
        XCTAssertEqual(try number("1e308").doubleValue, 1e308)
        XCTAssertNil(try number("1e309").doubleValue)
        XCTAssertNil(try number("-1e400").doubleValue)
        XCTAssertEqual(try number("1e-400").doubleValue, 0)
        XCTAssertEqual(try number("123456789012345678901234567890").doubleValue, 1.2345678901234568e29)
    }

    func testLiteralValidation() {
        for valid in ["0", "-0", "1.5", "1e5", "-1.5E-5", "10"] { XCTAssertNotNil(JSONNumber(literal: valid), valid) }
        for invalid in ["", "-", "01", "1.", ".5", "+1", "1e", "NaN", "inf", " 1", "1 ", "0x10", "1_000"] {
            XCTAssertNil(JSONNumber(literal: invalid), invalid)
        }
    }

    func testConstructors() {
        XCTAssertEqual(JSONNumber(Int64.min).literal, "-9223372036854775808")
        XCTAssertEqual(JSONNumber(42).literal, "42")
        XCTAssertEqual(JSONNumber(0.1)?.literal, "0.1")
        XCTAssertEqual(JSONNumber(5.0)?.literal, "5.0")
        XCTAssertEqual(JSONNumber(1e-5)?.literal, "1e-05")
        XCTAssertEqual(JSONNumber(1e20)?.doubleValue, 1e20)
        XCTAssertNil(JSONNumber(Double.nan))
        XCTAssertNil(JSONNumber(-Double.infinity))
        XCTAssertEqual(JSONValue(Double.infinity), .null)
        XCTAssertEqual(JSONValue(2.5).doubleValue, 2.5)
        XCTAssertEqual(JSONValue(7).int64Value, 7)
    }

    func testEqualityIsLexical() throws {
        XCTAssertNotEqual(try number("1.0"), try number("1"))
        XCTAssertEqual(try number("1.0").int64Value, try number("1").int64Value)
        XCTAssertEqual(try JSONParser.parse("17"), 17)
    }
}
