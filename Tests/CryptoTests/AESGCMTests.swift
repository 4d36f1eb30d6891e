import XCTest
import Crypto

/// AES-256-GCM against the GCM specification's test cases 13, 14 and 16 (McGrew & Viega, as used by
/// NIST's CAVP), plus the sealed-box format and every way `open` must refuse.
final class AESGCMTests: XCTestCase {
    func testKnownAnswerVectors() throws {
        // Test case 13: zero key, zero IV, empty plaintext.
        let empty = try AESGCM.seal([], key: [UInt8](repeating: 0, count: 32), nonce: [UInt8](repeating: 0, count: 12))
        XCTAssertEqual(empty.ciphertext, [])
        XCTAssertEqual(hex(empty.tag), "530f8afbc74536b9a963b4f1c4cb738b")
        // Test case 14: zero key, zero IV, one zero block.
        let block = try AESGCM.seal([UInt8](repeating: 0, count: 16), key: [UInt8](repeating: 0, count: 32), nonce: [UInt8](repeating: 0, count: 12))
        XCTAssertEqual(hex(block.ciphertext), "cea7403d4d606b6e074ec5d3baf39d18")
        XCTAssertEqual(hex(block.tag), "d0d1c8a799996bf0265b98b5d48ab919")
        // Test case 16: 60-byte plaintext with 20 bytes of AAD.
        let key = unhex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = unhex("cafebabefacedbaddecaf888")
        let plaintext = unhex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
        let aad = unhex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let sealed = try AESGCM.seal(plaintext, key: key, nonce: nonce, authenticating: aad)
        XCTAssertEqual(hex(sealed.ciphertext), "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662")
        XCTAssertEqual(hex(sealed.tag), "76fc6ece0f4e1768cddf8853bb2d551b")
        XCTAssertEqual(try AESGCM.open(sealed.ciphertext, key: key, nonce: nonce, tag: sealed.tag, authenticating: aad), plaintext)
        XCTAssertThrowsCode(.authenticationFailed) { _ = try AESGCM.open(sealed.ciphertext, key: key, nonce: nonce, tag: sealed.tag, authenticating: []) }
    }

    func testSealedBoxFormatAndRoundTrip() throws {
        let key = SecureRandom.bytes(32)
        let message = Array("apple-api-key-secret".utf8)
        let box = try AESGCM.seal(message, key: key, authenticating: Array("project:7".utf8))
        XCTAssertEqual(box.count, message.count + 29)
        XCTAssertEqual(box[0], 1)
        XCTAssertEqual(try AESGCM.open(box, key: key, authenticating: Array("project:7".utf8)), message)
        // Fresh nonce per seal: the same plaintext never seals to the same bytes.
        let again = try AESGCM.seal(message, key: key, authenticating: Array("project:7".utf8))
        XCTAssertNotEqual(Array(box[1..<13]), Array(again[1..<13]))
        XCTAssertEqual(try AESGCM.open([UInt8](try AESGCM.seal([], key: key)), key: key), [])
    }

    func testOpenRefusesEveryTamperingWithOneCode() throws {
        let key = SecureRandom.bytes(32)
        let box = try AESGCM.seal(Array("secret".utf8), key: key, authenticating: [1])
        for index in 1..<box.count {   // every bit position of nonce, ciphertext and tag
            var tampered = box
            tampered[index] ^= 0x01
            XCTAssertThrowsCode(.authenticationFailed) { _ = try AESGCM.open(tampered, key: key, authenticating: [1]) }
        }
        XCTAssertThrowsCode(.authenticationFailed) { _ = try AESGCM.open(box, key: SecureRandom.bytes(32), authenticating: [1]) }
        XCTAssertThrowsCode(.authenticationFailed) { _ = try AESGCM.open(box, key: key, authenticating: [2]) }
        var version = box; version[0] = 2
        XCTAssertThrowsCode(.unsupportedFormat) { _ = try AESGCM.open(version, key: key, authenticating: [1]) }
        XCTAssertThrowsCode(.invalidInput) { _ = try AESGCM.open(Array(box.prefix(28)), key: key, authenticating: [1]) }
        XCTAssertThrowsCode(.authenticationFailed) { _ = try AESGCM.open(Array(box.dropLast()), key: key, authenticating: [1]) }
        XCTAssertThrowsCode(.invalidKey) { _ = try AESGCM.seal([1], key: [UInt8](repeating: 0, count: 16)) }
        XCTAssertThrowsCode(.invalidInput) { _ = try AESGCM.seal([1], key: key, nonce: [0]) }
    }

    func testSecureRandomBytes() {
        XCTAssertEqual(SecureRandom.bytes(0), [])
        XCTAssertEqual(SecureRandom.bytes(33).count, 33)
        XCTAssertNotEqual(SecureRandom.bytes(16), SecureRandom.bytes(16))
    }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

func unhex(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8)
    return stride(from: 0, to: digits.count - 1, by: 2).compactMap { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16) }
}

func XCTAssertThrowsCode(_ code: CryptoError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) {
    do {
        try body()
        XCTFail("expected \(code), nothing thrown", file: file, line: line)
    } catch let error as CryptoError {
        XCTAssertEqual(error.code, code, error.debugDescription, file: file, line: line)
    } catch {
        XCTFail("expected CryptoError \(code), got \(error)", file: file, line: line)
    }
}
