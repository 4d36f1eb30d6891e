import AppStoreJWS
import XCTest
@testable import AppReceipt

/// The DER reader and the payload decoder on hand-built input: every malformation a clean `DERError`.
final class DERReaderTests: XCTestCase {
    // MARK: Builders

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let n = content.count
        if n < 0x80 { return [tag, UInt8(n)] + content }
        var length: [UInt8] = []
        var rest = n
        while rest > 0 { length.insert(UInt8(rest & 0xFF), at: 0); rest >>= 8 }
        return [tag, 0x80 | UInt8(length.count)] + length + content
    }
    static func integer(_ value: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = value
        repeat { bytes.insert(UInt8(rest & 0xFF), at: 0); rest >>= 8 } while rest > 0
        if let first = bytes.first, first & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }
    static func utf8(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
    static func ia5(_ text: String) -> [UInt8] { tlv(0x16, Array(text.utf8)) }
    static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
        tlv(0x30, integer(type) + integer(1) + tlv(0x04, value))
    }
    static func payload(_ attributes: [[UInt8]]) -> [UInt8] { tlv(0x31, attributes.flatMap { $0 }) }
    static func minimal(extra: [[UInt8]] = [], type: String = "Production") -> [UInt8] {
        payload([attribute(0, utf8(type)), attribute(2, utf8("com.example")), attribute(3, utf8("7")),
                 attribute(12, ia5("2024-02-29T23:59:59Z"))] + extra)
    }

    func assertMalformed(_ bytes: [UInt8], _ fragment: String, file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try ReceiptPayloadDecoder.decode(bytes)
            XCTFail("decoded", file: file, line: line)
        } catch {
            XCTAssertTrue(error.reason.contains(fragment), "\(error.reason) lacks \(fragment)", file: file, line: line)
        }
    }

    // MARK: Reader

    func testLengthsMustFitTheRemainingBytes() {
        var reader = DERReader([0x04, 0x05, 0x01, 0x02])
        XCTAssertThrowsError(try reader.next()) { XCTAssertTrue(($0 as? DERError)?.reason.contains("exceeds") == true) }
        // A four-octet length near 2^32 on a tiny buffer: rejected before any slice, no overflow.
        var huge = DERReader([0x04, 0x84, 0xFF, 0xFF, 0xFF, 0xFF, 0x00])
        XCTAssertThrowsError(try huge.next())
        var tooWide = DERReader([0x04, 0x89, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        XCTAssertThrowsError(try tooWide.next()) { XCTAssertTrue(($0 as? DERError)?.reason.contains("too large") == true) }
    }

    func testIndefiniteAndNonMinimalLengthsAreNotDER() {
        var indefinite = DERReader([0x30, 0x80, 0x00, 0x00])
        XCTAssertThrowsError(try indefinite.next()) { XCTAssertTrue(($0 as? DERError)?.reason.contains("indefinite") == true) }
        var shortInLongForm = DERReader([0x04, 0x81, 0x01, 0xAA])
        XCTAssertThrowsError(try shortInLongForm.next()) { XCTAssertTrue(($0 as? DERError)?.reason.contains("non-minimal") == true) }
        var leadingZero = DERReader([0x04, 0x82, 0x00, 0x81] + [UInt8](repeating: 0, count: 0x81))
        XCTAssertThrowsError(try leadingZero.next())
        var highTag = DERReader([0x1F, 0x81, 0x00, 0x00])
        XCTAssertThrowsError(try highTag.next())
    }

    func testTruncationAtEveryPointIsAnErrorNeverATrap() {
        let whole = Self.minimal(extra: [Self.attribute(17, Self.payload([Self.attribute(1702, Self.utf8("p")), Self.attribute(1703, Self.utf8("1"))]))])
        XCTAssertNoThrow(try ReceiptPayloadDecoder.decode(whole))
        for length in 0..<whole.count {
            XCTAssertThrowsError(try ReceiptPayloadDecoder.decode(Array(whole.prefix(length))), "prefix \(length)")
        }
    }

    func testIntegersAreBoundedAndMinimal() throws {
        func int(_ bytes: [UInt8]) throws -> Int64 { try DERReader(bytes).integer(DERElement(tag: 0x02, content: 0..<bytes.count)) }
        XCTAssertEqual(try int([0x7F]), 127)
        XCTAssertEqual(try int([0x00, 0x80]), 128)
        XCTAssertEqual(try int([0xFF]), -1)
        XCTAssertEqual(try int([0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]), Int64.max)
        XCTAssertEqual(try int([0x80, 0, 0, 0, 0, 0, 0, 0]), Int64.min)
        XCTAssertThrowsError(try int([0x00, 0x80, 0, 0, 0, 0, 0, 0, 0]))   // nine octets
        XCTAssertThrowsError(try int([0x00, 0x7F]))                          // non-minimal
        XCTAssertThrowsError(try int([0xFF, 0x80]))                          // non-minimal negative
        XCTAssertThrowsError(try int([]))
    }

    // MARK: Payload

    func testDeepNestingIsReadAsAWrongTypeWithoutRecursion() {
        var nested: [UInt8] = Self.utf8("x")
        for _ in 0..<10_000 { nested = Self.tlv(0x31, nested) }
        assertMalformed(Self.minimal(extra: [Self.attribute(17, nested)]), "in-app")
        assertMalformed(Self.payload([nested]), "receipt attribute")
    }

    func testRequiredFieldsDuplicatesAndTypes() {
        assertMalformed(Self.payload([Self.attribute(0, Self.utf8("Production"))]), "bundle id (2) is missing")
        assertMalformed(Self.minimal(extra: [Self.attribute(2, Self.utf8("com.other"))]), "field 2 appears twice")
        assertMalformed(Self.minimal(extra: [Self.attribute(19, Self.integer(1))]), "original application version (19)")
        assertMalformed(Self.minimal(extra: [Self.attribute(21, Self.ia5("2024-02-30T00:00:00Z"))]), "expiration date (21)")
        assertMalformed(Self.minimal(extra: [Self.attribute(17, Self.payload([Self.attribute(1702, Self.utf8("p"))]))]), "transaction id (1703)")
        assertMalformed(Self.minimal(extra: [Self.attribute(17, Self.payload([
            Self.attribute(1702, Self.utf8("p")), Self.attribute(1703, Self.utf8("1")), Self.attribute(1713, Self.integer(2))]))]), "expected 0 or 1")
        assertMalformed(Self.minimal() + [0x00], "bytes after")
        assertMalformed(Self.payload([Self.attribute(0, Self.utf8("Production") + [0x05, 0x00])]), "bytes after the value")
        assertMalformed(Self.payload([Self.attribute(0, Self.tlv(0x0C, [0xC3, 0x28]))]), "not valid UTF-8")
    }

    func testUnknownAttributesAreKeptAndDatesParsed() throws {
        let record = Self.payload([
            Self.attribute(1702, Self.utf8("pro")), Self.attribute(1703, Self.utf8("42")),
            Self.attribute(1704, Self.ia5("2024-01-01T00:00:00.250Z")), Self.attribute(1712, Self.ia5("")),
            Self.attribute(1721, Self.utf8("offer")), Self.attribute(1799, [0xDE, 0xAD])])
        let payload = try ReceiptPayloadDecoder.decode(Self.minimal(extra: [Self.attribute(17, record), Self.attribute(99, [1, 2, 3])]))
        XCTAssertEqual(payload.bundleId, "com.example")
        XCTAssertEqual(payload.creationDate.milliseconds, 1_709_251_199_000)   // 2024-02-29 exists (leap year)
        XCTAssertEqual(payload.otherAttributes, [ReceiptAttribute(type: 99, version: 1, value: [1, 2, 3])])
        let parsed = try XCTUnwrap(payload.inAppPurchases.first)
        XCTAssertEqual(parsed.purchaseDate?.milliseconds, 1_704_067_200_250)
        XCTAssertNil(parsed.cancellationDate)
        XCTAssertEqual(parsed.promotionalOfferId, "offer")
        XCTAssertEqual(parsed.otherAttributes, [ReceiptAttribute(type: 1799, version: 1, value: [0xDE, 0xAD])])
    }

    func testBase64FrontDoor() throws {
        XCTAssertEqual(try ReceiptVerifier.decodeBase64("QQ=="), [0x41])
        XCTAssertEqual(try ReceiptVerifier.decodeBase64("QQ"), [0x41])
        XCTAssertEqual(try ReceiptVerifier.decodeBase64(" QU\r\nI=\n"), [0x41, 0x42])
        XCTAssertEqual(try ReceiptVerifier.decodeBase64("QUJD"), [0x41, 0x42, 0x43])
        XCTAssertEqual(try ReceiptVerifier.decodeBase64("+/+/"), [0xFB, 0xFF, 0xBF])
        for bad in ["", "  ", "Q", "QQ=A", "QQ===", "QUJD=", "QU-D", "QU_D", "QUJDé"] {
            XCTAssertThrowsError(try ReceiptVerifier.decodeBase64(bad), bad) {
                XCTAssertEqual(($0 as? VerificationError)?.code, .invalidReceiptFormat, bad)
            }
        }
        XCTAssertEqual(try ReceiptVerifier.der(fromFileBytes: [0x30, 0x00]), [0x30, 0x00])   // DER passes through
        XCTAssertEqual(try ReceiptVerifier.der(fromFileBytes: Array("MAA=\n".utf8)), [0x30, 0x00])
    }

    func testReceiptDatesAreStrict() {
        XCTAssertEqual(ReceiptDate("1970-01-01T00:00:00Z")?.milliseconds, 0)
        XCTAssertEqual(ReceiptDate("2020-05-06T18:28:49Z")?.milliseconds, 1_588_789_729_000)
        XCTAssertEqual(ReceiptDate("2020-05-06T18:28:49.007Z")?.milliseconds, 1_588_789_729_007)
        XCTAssertEqual(ReceiptDate("4001-01-01T00:00:00Z")?.milliseconds, 64_092_211_200_000)
        for bad in ["", "2020-05-06 18:28:49Z", "2020-05-06T18:28:49", "2020-05-06T18:28:49+00:00", "2020-05-06T18:28:49.1Z",
                    "2020-05-06T18:28:49.1234Z", "2021-02-29T00:00:00Z", "2020-13-01T00:00:00Z", "2020-05-06T24:00:00Z",
                    "2020-05-06T18:60:00Z", "2020-05-06T18:28:60Z", "２020-05-06T18:28:49Z", "-020-05-06T18:28:49Z"] {
            XCTAssertNil(ReceiptDate(bad), bad)
        }
    }
}
