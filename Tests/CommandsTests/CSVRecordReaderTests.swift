@testable import Commands
import XCTest

/// The reader `bouncer verify FILE` streams an export through: RFC 4180 records from pieces of any size, bounded.
final class CSVRecordReaderTests: XCTestCase {
    private func records(_ text: String, piece: Int) throws -> [[String]] {
        var reader = CSVRecordReader()
        let bytes = Array(text.utf8)
        var out: [[String]] = []
        var start = 0
        while start < bytes.count {
            let end = min(start + piece, bytes.count)
            out += try reader.feed(Array(bytes[start..<end]))
            start = end
        }
        return out + (try reader.finish())
    }

    func testQuotedFieldsAcrossEveryPieceBoundary() throws {
        let text = "a,b,c\r\n\"x, y\",\"say \"\"hi\"\"\",\"two\r\nlines\"\r\n,,'=1\r\nlast,row,no-break"
        let expected = [["a", "b", "c"], ["x, y", "say \"hi\"", "two\r\nlines"], ["", "", "'=1"], ["last", "row", "no-break"]]
        for piece in 1...text.utf8.count {
            XCTAssertEqual(try records(text, piece: piece), expected, "pieces of \(piece)")
        }
    }

    func testBoundsAndAnUnclosedQuote() {
        XCTAssertThrowsError(try records("\"open,field\r\n", piece: 4))
        XCTAssertThrowsError(try records(String(repeating: "a,", count: CSVRecordReader.maxFields) + "\r\n", piece: 64))
        XCTAssertThrowsError(try records(String(repeating: "x", count: CSVRecordReader.maxRecordBytes + 1), piece: 65_536))
    }
}
