@testable import Commands
import Domain
import Primitives
import XCTest

/// `bouncer fx import`'s reader of the ECB's history CSV, on CSVRecordReader's records.
final class ECBRatesCSVTests: XCTestCase {
    private func rates(_ text: String) throws -> [String] {
        try ECBRatesCSV.parse(Array(text.utf8)).map {
            "\(RFC3339.day(secondsSince1970: $0.day.timeIntervalSince1970)) \($0.base) \($0.currency) \($0.rate.text)"
        }
    }

    private func failure(_ text: String) -> String? {
        do {
            _ = try ECBRatesCSV.parse(Array(text.utf8))
            return nil
        } catch {
            return error.message
        }
    }

    func testTheECBFormat() throws {
        // As published: LF line ends, a trailing comma, N/A for a currency not quoted that day; blank lines and
        // spaces around cells are tolerated, and so is CRLF.
        XCTAssertEqual(try rates("Date,USD,JPY,CYP,\n2025-01-03,1.0299,162.88,N/A,\n\n2025-01-02, 1.0321 ,163.22,,\r\n"),
                       ["2025-01-03 EUR USD 1.0299", "2025-01-03 EUR JPY 162.88",
                        "2025-01-02 EUR USD 1.0321", "2025-01-02 EUR JPY 163.22"])
        XCTAssertEqual(try rates("Date,USD\n1999-01-04,1.1789"), ["1999-01-04 EUR USD 1.1789"])
        XCTAssertEqual(try rates("\"Date\",\"USD\"\n\"2025-01-02\",\"1.0321\"\n"), ["2025-01-02 EUR USD 1.0321"])
    }

    func testEveryFailureNamesItsLine() {
        XCTAssertEqual(failure(""), "empty file")
        XCTAssertEqual(failure("\n\n"), "empty file")
        XCTAssertEqual(failure("Day,USD\n"), "line 1: expected a header starting with Date")
        XCTAssertEqual(failure("Date,usd\n"), "line 1: usd is not an ISO 4217 code")
        XCTAssertEqual(failure("Date,USD\n2025-01-06,1,0321\n"), "line 2: more cells than the header")
        XCTAssertEqual(failure("Date,USD\n\n2025-02-29,1\n"), "line 3: expected a date as YYYY-MM-DD")
        XCTAssertEqual(failure("Date,USD\n2025-01-06,1e3\n"), "line 2: USD is not a positive decimal")
        XCTAssertEqual(failure("Date,USD\n2025-01-06,0\n"), "line 2: USD is not a positive decimal")
        XCTAssertEqual(failure("Date,USD\n\"2025-01-06,1\n"), "line 3: a quoted field is not closed")
        XCTAssertEqual(failure("Date" + String(repeating: ",USD", count: CSVRecordReader.maxFields) + "\n"),
                       "line 1: more than \(CSVRecordReader.maxFields) fields")
    }
}
