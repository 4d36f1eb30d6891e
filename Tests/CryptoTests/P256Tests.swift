import Foundation
import XCTest
import Crypto

/// P-256 keys from `.p8` PEM (made here by the openssl CLI, like App Store Connect's), ES256 in both
/// signature forms, fingerprints, and the refusals.
final class P256Tests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("p256-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: directory) }

    func testP8FromOpenSSLSignsAndVerifies() throws {
        let p8 = try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "key.p8"], output: "key.p8")
        XCTAssertTrue(p8.hasPrefix("-----BEGIN PRIVATE KEY-----"))   // PKCS#8, as App Store Connect ships them
        let key = try P256.PrivateKey(pem: p8)
        let message = Array("header.payload".utf8)
        let raw = try key.signES256(message)
        XCTAssertEqual(raw.count, 64)
        let publicKey = try key.publicKey
        XCTAssertTrue(publicKey.verifyES256(rawSignature: raw, message: message))
        XCTAssertFalse(publicKey.verifyES256(rawSignature: raw, message: Array("header.payloaD".utf8)))
        var flipped = raw; flipped[10] ^= 1
        XCTAssertFalse(publicKey.verifyES256(rawSignature: flipped, message: message))

        let der = try key.signDER(message)
        XCTAssertEqual(der.first, 0x30)
        XCTAssertTrue(publicKey.verifyDER(signature: der, message: message))
        XCTAssertEqual(P256.derSignature(fromRaw: try P256.rawSignature(fromDER: der)), der)

        // The public key and fingerprint agree with openssl's view of the same file.
        let spki = try opensslBytes(["pkey", "-in", "key.p8", "-pubout", "-outform", "DER", "-out", "pub.der"], output: "pub.der")
        XCTAssertEqual(publicKey.derRepresentation, spki)
        XCTAssertEqual(key.fingerprint, hex(Digest.sha256(spki)))
        XCTAssertEqual(publicKey.fingerprint, key.fingerprint)
        XCTAssertEqual(key.fingerprint.count, 64)
        XCTAssertFalse(key.description.contains("PRIVATE"))

        // openssl verifies our DER signature with the exported PEM public key.
        try Data(publicKey.pemRepresentation.utf8).write(to: directory.appendingPathComponent("pub.pem"))
        try Data(message).write(to: directory.appendingPathComponent("message"))
        try Data(der).write(to: directory.appendingPathComponent("sig.der"))
        let verified = try run(["dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "message"])
        XCTAssertTrue(verified.contains("Verified OK"), verified)
    }

    func testSignaturesFromOpenSSLVerify() throws {
        _ = try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "key.p8"], output: "key.p8")
        try Data("promo|offer".utf8).write(to: directory.appendingPathComponent("message"))
        let der = try opensslBytes(["dgst", "-sha256", "-sign", "key.p8", "-out", "sig.der", "message"], output: "sig.der")
        let key = try P256.PrivateKey(pem: String(decoding: try Data(contentsOf: directory.appendingPathComponent("key.p8")), as: UTF8.self))
        XCTAssertTrue(try key.publicKey.verifyDER(signature: der, message: Array("promo|offer".utf8)))
        XCTAssertTrue(try key.publicKey.verifyES256(rawSignature: try P256.rawSignature(fromDER: der), message: Array("promo|offer".utf8)))
    }

    func testSEC1AndGeneratedKeysRoundTrip() throws {
        let sec1 = try openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sec1.pem"], output: "sec1.pem")
        XCTAssertTrue(sec1.contains("BEGIN EC PRIVATE KEY"))
        XCTAssertNoThrow(try P256.PrivateKey(pem: sec1))
        let generated = try P256.PrivateKey()
        let reparsed = try P256.PrivateKey(pem: try generated.pkcs8PEM())
        XCTAssertEqual(reparsed.fingerprint, generated.fingerprint)
        let signature = try reparsed.signES256([1, 2, 3])
        XCTAssertTrue(try generated.publicKey.verifyES256(rawSignature: signature, message: [1, 2, 3]))
        XCTAssertNotEqual(try P256.PrivateKey().fingerprint, generated.fingerprint)
    }

    func testRefusesOtherKeysWithClearErrors() throws {
        let p384 = try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", "p384.p8"], output: "p384.p8")
        XCTAssertThrowsCode(.unsupportedKey) { _ = try P256.PrivateKey(pem: p384) }
        do { _ = try P256.PrivateKey(pem: p384) } catch { XCTAssertTrue("\(error)".contains("not EC P-256"), "\(error)") }
        let rsa = try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", "rsa.p8"], output: "rsa.p8")
        XCTAssertThrowsCode(.unsupportedKey) { _ = try P256.PrivateKey(pem: rsa) }
        let ed = try openssl(["genpkey", "-algorithm", "ED25519", "-out", "ed.p8"], output: "ed.p8")
        XCTAssertThrowsCode(.unsupportedKey) { _ = try P256.PrivateKey(pem: ed) }
        let encrypted = try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes-256-cbc", "-pass", "pass:x", "-out", "enc.p8"], output: "enc.p8")
        XCTAssertThrowsCode(.invalidKey) { _ = try P256.PrivateKey(pem: encrypted) }
        XCTAssertThrowsCode(.invalidKey) { _ = try P256.PrivateKey(pem: "") }
        XCTAssertThrowsCode(.invalidKey) { _ = try P256.PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
        XCTAssertThrowsCode(.invalidInput) { _ = try P256.rawSignature(fromDER: [0x30, 0x00]) }
        XCTAssertThrowsCode(.invalidInput) { _ = try P256.rawSignature(fromDER: []) }
        XCTAssertThrowsCode(.invalidKey) { _ = try P256.PublicKey(derSubjectPublicKeyInfo: [0x30, 0x03, 0x02, 0x01, 0x00]) }
        let rsaPublic = try opensslBytes(["pkey", "-in", "rsa.p8", "-pubout", "-outform", "DER", "-out", "rsa.der"], output: "rsa.der")
        XCTAssertThrowsCode(.unsupportedKey) { _ = try P256.PublicKey(derSubjectPublicKeyInfo: rsaPublic) }
        XCTAssertEqual(P256.derSignature(fromRaw: [1, 2]), [])
    }

    func testConcurrentSigningAndVerification() throws {
        let key = try P256.PrivateKey()
        let publicKey = try key.publicKey
        DispatchQueue.concurrentPerform(iterations: 64) { index in
            let message = Array("message \(index)".utf8)
            guard let signature = try? key.signES256(message) else { return XCTFail("signing failed") }
            XCTAssertTrue(publicKey.verifyES256(rawSignature: signature, message: message))
        }
    }

    // MARK: openssl CLI

    @discardableResult
    private func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = directory
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: output, as: UTF8.self)
        guard process.terminationStatus == 0 else { throw CLIError(text: "openssl \(arguments.joined(separator: " ")): \(text)") }
        return text
    }

    private func opensslBytes(_ arguments: [String], output: String) throws -> [UInt8] {
        try run(arguments)
        return [UInt8](try Data(contentsOf: directory.appendingPathComponent(output)))
    }

    private func openssl(_ arguments: [String], output: String) throws -> String {
        String(decoding: try opensslBytes(arguments, output: output), as: UTF8.self)
    }

    struct CLIError: Error { var text: String }
}
