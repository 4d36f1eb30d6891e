import Primitives
import XCTest

final class HexTests: XCTestCase {
    func testEncodeTable() {
        XCTAssertEqual(Hex.encode([]), "")
        XCTAssertEqual(Hex.encode([0x00]), "00")
        XCTAssertEqual(Hex.encode([0x0F, 0xF0, 0xAB, 0xFF, 0x01]), "0ff0abff01")
        XCTAssertEqual(Hex.encode([0x0F, 0xF0, 0xAB, 0xFF, 0x01], uppercase: true), "0FF0ABFF01")
        XCTAssertEqual(Hex.encode(Array(0...255)).utf8.count, 512)
    }

    func testEveryByteMatchesTheFormatOfPrintf() {
        for byte in UInt8.min...UInt8.max {
            let expected = (byte < 16 ? "0" : "") + String(byte, radix: 16)
            XCTAssertEqual(Hex.encode([byte]), expected)
            XCTAssertEqual(Hex.encode([byte], uppercase: true), expected.uppercased())
        }
    }

    func testValueOfEveryByte() {
        for byte in UInt8.min...UInt8.max {
            let expected = UInt8(String(UnicodeScalar(byte)), radix: 16)
            XCTAssertEqual(Hex.value(of: byte), expected, "\(byte)")
            XCTAssertEqual(Hex.isLowercaseDigit(byte), expected != nil && !(0x41...0x46).contains(byte), "\(byte)")
        }
        XCTAssertNil(Hex.value(of: UInt8(ascii: "g")))
        XCTAssertNil(Hex.value(of: UInt8(ascii: "G")))
        XCTAssertEqual(Hex.value(of: UInt8(ascii: "F")), 15)
    }

    func testRandomIsTwoDigitsPerByteAndFollowsTheGenerator() {
        var a = SplitMix(seed: 7), b = SplitMix(seed: 7)
        let text = Hex.random(count: 16, using: &a)
        XCTAssertEqual(text.utf8.count, 32)
        XCTAssertTrue(text.utf8.allSatisfy(Hex.isLowercaseDigit))
        XCTAssertEqual(text, Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &b) }))
        XCTAssertEqual(Hex.random(count: 0, using: &a), "")
        XCTAssertEqual(Hex.random(count: -3, using: &a), "")
    }

    func testUUIDTextIsFoundationsTextInEitherCase() {
        for id in [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                   UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))]
            + (0..<200).map({ _ in UUID() }) {
            let upper = withUnsafeBytes(of: id.uuid) { Hex.uuidText($0, uppercase: true) }
            let lower = withUnsafeBytes(of: id.uuid) { Hex.uuidText($0) }
            XCTAssertEqual(upper, id.uuidString)
            XCTAssertEqual(lower, id.uuidString.lowercased())
        }
    }

    func testUUIDTextOfAShortBufferWritesOnlyItsBytes() {
        XCTAssertEqual([UInt8]([0xAB, 0xCD, 0xEF, 0x01, 0x23]).withUnsafeBytes { Hex.uuidText($0) }, "abcdef01-23")
        XCTAssertEqual([UInt8]().withUnsafeBytes { Hex.uuidText($0) }, "")
    }
}

/// A deterministic generator for tests.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z &>> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z &>> 27)) &* 0x94D0_49BB_1330_11EB
        return z ^ (z &>> 31)
    }
}
