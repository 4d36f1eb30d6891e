import Foundation
import XCTest
import Crypto

/// Certificate parsing and `CertificateStore` path validation on the committed test PKI.
final class CertificateTests: XCTestCase {
    private static let pki = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/pki")

    private func certificate(_ name: String) throws -> Certificate {
        let pem = String(decoding: try Data(contentsOf: Self.pki.appendingPathComponent(name)), as: UTF8.self)
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let der = try XCTUnwrap(Data(base64Encoded: body))
        return try XCTUnwrap(Certificate(der: [UInt8](der)))
    }

    func testParsesAndValidatesTheTestChain() throws {
        let root = try certificate("root.pem"), intermediate = try certificate("intermediate.pem"), leaf = try certificate("leaf.pem")
        XCTAssertEqual(Certificate(der: leaf.derRepresentation), leaf)
        XCTAssertNotEqual(leaf, root)
        XCTAssertTrue(root.isCA)
        XCTAssertFalse(leaf.isCA)
        XCTAssertNotNil(leaf.p256PublicKey())
        XCTAssertTrue(leaf.subjectDescription.hasPrefix("/"))
        let store = CertificateStore(certificates: [root])
        let notBefore = try XCTUnwrap(leaf.notBefore)
        switch store.validate(leaf: leaf, intermediates: [intermediate], at: notBefore + 60, strict: true) {
        case .success(let chain): XCTAssertEqual(chain, [leaf, intermediate, root])
        case .failure(let error): XCTFail("\(error)")
        }
        switch store.validate(leaf: leaf, intermediates: [], at: notBefore + 60, strict: true) {
        case .success: XCTFail("validated without the intermediate")
        case .failure(let error): XCTAssertEqual(error.code, .untrusted)
        }
        switch store.validate(leaf: leaf, intermediates: [intermediate], at: notBefore - 86_400 * 400, strict: true) {
        case .success: XCTFail("validated before notBefore")
        case .failure(let error): XCTAssertEqual(error.code, .notYetValid)
        }
    }

    func testRejectsTrailingBytesAndGarbage() throws {
        let leaf = try certificate("leaf.pem")
        XCTAssertNil(Certificate(der: leaf.derRepresentation + [0]))
        XCTAssertNil(Certificate(der: []))
        XCTAssertNil(Certificate(der: [0x30, 0x82, 0xFF, 0xFF]))
        XCTAssertEqual(OpenSSLErrors.drain().isEmpty, false)
        XCTAssertEqual(OpenSSLErrors.drain(), "")
    }
}
