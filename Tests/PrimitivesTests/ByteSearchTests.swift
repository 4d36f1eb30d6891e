import Foundation
import Primitives
import XCTest

final class ByteSearchTests: XCTestCase {
    func testTheFirstByteAtOrAfterTheStartIsFound() {
        let dot = UInt8(ascii: ".")
        XCTAssertEqual("a.b.c".utf8Offset(of: dot), 1)
        XCTAssertEqual("a.b.c".utf8Offset(of: dot, from: 1), 1)
        XCTAssertEqual("a.b.c".utf8Offset(of: dot, from: 2), 3)
        XCTAssertNil("a.b.c".utf8Offset(of: dot, from: 4))
        XCTAssertNil("abc".utf8Offset(of: dot))
        XCTAssertNil("".utf8Offset(of: 0))
        // Offsets count UTF-8 bytes, not characters: "é" is two bytes, "🙂" four.
        XCTAssertEqual("é🙂\u{0}".utf8Offset(of: 0), 6)
        XCTAssertEqual((String(repeating: "eyJhbGciOi", count: 400) + ".").utf8Offset(of: dot), 4_000)
    }

    func testAStartOutsideTheTextFindsNothing() {
        XCTAssertNil("a.b".utf8Offset(of: UInt8(ascii: "."), from: -1))
        XCTAssertNil("a.b".utf8Offset(of: UInt8(ascii: "."), from: 3))
        XCTAssertNil("a.b".utf8Offset(of: UInt8(ascii: "."), from: Int.max))
    }

    func testABridgedStringIsSearchedToo() {
        let bridged = NSString(string: "ab\u{0}c") as String
        XCTAssertEqual(bridged.utf8Offset(of: 0), 2)
    }

    func testBytes() {
        XCTAssertEqual(Array("x\u{0}y".utf8).offset(of: 0), 1)
        XCTAssertNil([UInt8]().offset(of: 0))
        XCTAssertNil(Array("xy".utf8).offset(of: 0))
    }
}
