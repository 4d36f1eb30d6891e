import Primitives
import XCTest

final class Base64Tests: XCTestCase {
    func decodeURL(_ text: String) -> [UInt8]? {
        var copy = text
        return copy.withUTF8 { Base64.decodeURL($0) }
    }
    func decodeStandard(_ text: String) -> [UInt8]? { Base64.decodeStandard(text) }
    func decodeWrapped(_ text: String, maxBytes: Int = 1 << 20) -> Result<[UInt8], Base64.WrappedFailure> {
        Result { () throws(Base64.WrappedFailure) in try Base64.decodeWrapped(text, maxBytes: maxBytes) }
    }

    // Moved from AppStoreJWSTests.Base64AndRootsTests.
    func testBase64URL() {
        XCTAssertEqual(decodeURL(""), [])
        XCTAssertEqual(decodeURL("QQ"), [0x41])
        XCTAssertEqual(decodeURL("QQ=="), [0x41])
        XCTAssertEqual(decodeURL("QUI"), [0x41, 0x42])
        XCTAssertEqual(decodeURL("QUI="), [0x41, 0x42])
        XCTAssertEqual(decodeURL("QUJD"), [0x41, 0x42, 0x43])
        XCTAssertEqual(decodeURL("-_-_"), [0xFB, 0xFF, 0xBF])
        XCTAssertNil(decodeURL("+/+/"))        // standard alphabet is not base64url
        XCTAssertNil(decodeURL("Q"))           // dangling symbol
        XCTAssertNil(decodeURL("QR"))          // non-zero trailing bits (non-canonical)
        XCTAssertNil(decodeURL("QQ="))         // padding that does not complete a quad
        XCTAssertNil(decodeURL("Q==="))
        XCTAssertNil(decodeURL("QU I"))
        XCTAssertNil(decodeURL("QQ==QQ=="))
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            XCTAssertEqual(decodeURL(Base64.encodeURL(bytes)), bytes)
        }
    }

    // Moved from AppStoreJWSTests.Base64AndRootsTests.
    func testBase64Standard() {
        XCTAssertEqual(decodeStandard("QUJD"), [0x41, 0x42, 0x43])
        XCTAssertEqual(decodeStandard("+/+/"), [0xFB, 0xFF, 0xBF])
        XCTAssertEqual(decodeStandard("QQ=="), [0x41])
        XCTAssertNil(decodeStandard("QQ"))     // x5c is padded standard base64
        XCTAssertNil(decodeStandard("-_-_"))
        XCTAssertNil(decodeStandard("QUJD\n"))
    }

    func testEdgeCases() {
        XCTAssertEqual(decodeStandard(""), [])
        XCTAssertNil(decodeURL("="))
        XCTAssertNil(decodeURL("=="))
        XCTAssertNil(decodeStandard("===="))
        XCTAssertNil(decodeStandard("QQ=A"))
        XCTAssertNil(decodeStandard("QR=="))   // non-zero trailing bits
        XCTAssertNil(decodeStandard("QUJ="), "trailing bits of the third symbol")
        XCTAssertEqual(decodeStandard("QUI="), [0x41, 0x42])
        XCTAssertNil(decodeURL("QUJDé"))
        XCTAssertNil(decodeURL("QUJD\u{0}"))
        for byte in UInt8.min...UInt8.max where byte >= 0x80 {
            XCTAssertNil(Array([UInt8(ascii: "Q"), UInt8(ascii: "Q"), byte, UInt8(ascii: "Q")]).withUnsafeBufferPointer(Base64.decodeURL))
        }
    }

    func testEncodersMatchRFC4648TestVectors() {
        // RFC 4648 §10.
        let vectors = [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                       ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64.encodeStandard(Array(plain.utf8)), encoded)
            XCTAssertEqual(Base64.encodeURL(Array(plain.utf8)), encoded.replacingOccurrences(of: "=", with: ""))
            XCTAssertEqual(decodeStandard(encoded), Array(plain.utf8))
            XCTAssertEqual(decodeURL(encoded), Array(plain.utf8))
        }
        XCTAssertEqual(Base64.encodeStandard([0xFB, 0xFF, 0xBF]), "+/+/")
        XCTAssertEqual(Base64.encodeURL([0xFB, 0xFF, 0xBF]), "-_-_")
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 53 &+ 200) }
            XCTAssertEqual(decodeStandard(Base64.encodeStandard(bytes)), bytes)
        }
    }

    // The receipt front door's form (was AppReceipt's decoder; AppReceiptTests keeps its error mapping).
    func testWrapped() {
        XCTAssertEqual(decodeWrapped("QQ=="), .success([0x41]))
        XCTAssertEqual(decodeWrapped("QQ"), .success([0x41]))
        XCTAssertEqual(decodeWrapped(" QU\r\nI=\n"), .success([0x41, 0x42]))
        XCTAssertEqual(decodeWrapped("QUJD"), .success([0x41, 0x42, 0x43]))
        XCTAssertEqual(decodeWrapped("+/+/"), .success([0xFB, 0xFF, 0xBF]))
        XCTAssertEqual(decodeWrapped("QR"), .success([0x41]), "trailing bits are not checked")
        XCTAssertEqual(decodeWrapped(""), .success([]))
        XCTAssertEqual(decodeWrapped(" \t\r\n"), .success([]))
        let failures: [(String, Base64.WrappedFailure)] = [
            ("Q", .truncated), ("QQ=A", .dataAfterPadding), ("QQ===", .tooMuchPadding), ("QUJD=", .wrongPadding),
            ("QQ=", .wrongPadding), ("QU-D", .unexpectedCharacter), ("QU_D", .unexpectedCharacter),
            ("QUJDé", .unexpectedCharacter), ("QUJD\u{0}", .unexpectedCharacter), ("QUJD\u{0B}", .unexpectedCharacter),
        ]
        for (text, failure) in failures {
            XCTAssertEqual(decodeWrapped(text), .failure(failure), text)
        }
        XCTAssertEqual(decodeWrapped("QUJD", maxBytes: 3), .success([0x41, 0x42, 0x43]))
        XCTAssertEqual(decodeWrapped("QUJDRA", maxBytes: 3), .failure(.tooLong))
        XCTAssertEqual(decodeWrapped("QUJDREVG", maxBytes: 3), .failure(.tooLong))
        XCTAssertEqual(decodeWrapped("QQ", maxBytes: 0), .failure(.tooLong))
    }
}
