import Foundation
import TestSupport
import XCTest
import Crypto

/// `PKCS7SignedData` on the real StoreKit 1 receipts: structure, signer, digest, signature; no chain (the caller's).
final class PKCS7Tests: XCTestCase {
    private func receipt(_ name: String) throws -> [UInt8] {
        let text = try String(contentsOf: TestPaths.vectors.appendingPathComponent(name), encoding: .utf8)
        return [UInt8](try XCTUnwrap(Data(base64Encoded: text, options: .ignoreUnknownCharacters)))
    }

    func testRealReceiptsParseWithTheirSignerDigestAndContent() throws {
        let sha256 = try PKCS7SignedData(der: receipt("legacy-receipt-sandbox-2025-sha256-g5.b64"))
        XCTAssertEqual(sha256.digestAlgorithm, .sha256)
        XCTAssertEqual(sha256.certificates.count, 3)
        XCTAssertEqual(sha256.content.count, 1344)
        XCTAssertEqual(sha256.content.first, 0x31)   // the receipt's SET of attributes
        let signer = try XCTUnwrap(sha256.signer)
        XCTAssertTrue(signer.subjectDescription.contains("Receipt Signing"), signer.subjectDescription)
        XCTAssertNoThrow(try sha256.verifySignature())

        let sha1 = try PKCS7SignedData(der: receipt("legacy-receipt-sandbox-2020-sha1.b64"))
        XCTAssertEqual(sha1.digestAlgorithm, .sha1)
        XCTAssertEqual(sha1.content.count, 74_884)
        XCTAssertNoThrow(try sha1.verifySignature())
    }

    func testAFlippedContentByteFailsTheSignatureAndGarbageIsInvalidInput() throws {
        var der = try receipt("legacy-receipt-sandbox-2025-sha256-g5.b64")
        let needle = Array("dev.bonzer.weeka.app".utf8)
        let offset = try XCTUnwrap((0...(der.count - needle.count)).first { Array(der[$0..<($0 + needle.count)]) == needle })
        der[offset] ^= 0x20
        let tampered = try PKCS7SignedData(der: der)
        XCTAssertThrowsError(try tampered.verifySignature()) { XCTAssertEqual(($0 as? CryptoError)?.code, .authenticationFailed) }

        for bad in [[], [0x30], [0x30, 0x03, 0x02, 0x01, 0x00], Array(der.prefix(100)), der + [0]] as [[UInt8]] {
            XCTAssertThrowsError(try PKCS7SignedData(der: bad)) { XCTAssertEqual(($0 as? CryptoError)?.code, .invalidInput) }
        }
    }
}
