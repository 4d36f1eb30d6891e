import Primitives
import XCTest

/// Base32 against RFC 4648 §10's vectors, both ways.
final class Base32Tests: XCTestCase {
    func testRFC4648Vectors() {
        let vectors = [("", ""), ("f", "MY======"), ("fo", "MZXQ===="), ("foo", "MZXW6==="), ("foob", "MZXW6YQ="),
                       ("fooba", "MZXW6YTB"), ("foobar", "MZXW6YTBOI======")]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base32.encode(Array(plain.utf8)), encoded)
            XCTAssertEqual(Base32.encode(Array(plain.utf8), padding: false),
                           String(encoded.prefix { $0 != "=" }))
            XCTAssertEqual(Base32.decode(encoded), Array(plain.utf8), encoded)
            XCTAssertEqual(Base32.decode(encoded.lowercased().replacingOccurrences(of: "=", with: "")),
                           Array(plain.utf8))
        }
    }

    func testRejectsWhatIsNotBase32() {
        XCTAssertNil(Base32.decode("MY1"))
        XCTAssertNil(Base32.decode("MY=A"))
        XCTAssertNil(Base32.decode("MZ"))   // leftover bits that are not zero
        let random = (0..<40).map { _ in UInt8.random(in: 0...255) }
        XCTAssertEqual(Base32.decode(Base32.encode(random, padding: false)), random)
    }
}
