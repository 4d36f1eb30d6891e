import Foundation
import XCTest
@testable import Crypto
import TestSupport

/// `P256.FixedBaseVerifier` (a key's precomputed table) against OpenSSL's own `EVP_PKEY_verify`, the reference: the
/// same verdict on valid signatures, tampered ones, malleated ones and every out-of-range r and s.
final class P256FixedBaseTests: XCTestCase {
    /// The order n of P-256, big-endian.
    private static let order: [UInt8] = hexBytes("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")

    func testAgreesWithEVPOnValidAndTamperedSignatures() throws {
        let key = try P256.PrivateKey()
        let publicKey = try key.publicKey
        XCTAssertFalse(publicKey.usesFixedBase)
        XCTAssertTrue(publicKey.prepareFixedBase())
        XCTAssertTrue(publicKey.usesFixedBase)
        var generator = SystemRandomNumberGenerator()
        for index in 0..<40 {
            let message = Array("header.payload \(index)".utf8)
            let digest = Digest.sha256(message)
            let signature = try key.signES256(message)
            assertSameVerdict(publicKey, signature, digest, expected: true, "valid \(index)")
            XCTAssertTrue(publicKey.verifyES256(rawSignature: signature, message: message))

            // ECDSA accepts (r, n − s) as well: both paths must (JOSE does not forbid it; OpenSSL accepts it).
            var malleated = signature
            malleated.replaceSubrange(32..<64, with: Self.subtract(Self.order, Array(signature[32..<64])))
            assertSameVerdict(publicKey, malleated, digest, expected: true, "n - s \(index)")

            var flipped = signature
            flipped[Int.random(in: 0..<64, using: &generator)] ^= UInt8(1 << Int.random(in: 0..<8, using: &generator))
            assertSameVerdict(publicKey, flipped, digest, expected: false, "flipped signature \(index)")
            var otherDigest = digest
            otherDigest[Int.random(in: 0..<32, using: &generator)] ^= 0x01
            assertSameVerdict(publicKey, signature, otherDigest, expected: false, "flipped digest \(index)")
            XCTAssertFalse(publicKey.verifyES256(rawSignature: signature, message: message + [0]))
            // r and s swapped, and random bytes.
            assertSameVerdict(publicKey, Array(signature[32..<64] + signature[0..<32]), digest, expected: false, "swapped \(index)")
            let random = (0..<64).map { _ in UInt8.random(in: 0...255, using: &generator) }
            assertSameVerdict(publicKey, random, digest, expected: false, "random \(index)")
        }
        // Another key's signature.
        let other = try P256.PrivateKey()
        let message = Array("other".utf8)
        assertSameVerdict(publicKey, try other.signES256(message), Digest.sha256(message), expected: false, "other key")
    }

    func testRefusesOutOfRangeRAndS() throws {
        let key = try P256.PrivateKey()
        let publicKey = try key.publicKey
        XCTAssertTrue(publicKey.prepareFixedBase())
        let message = Array("range".utf8)
        let digest = Digest.sha256(message)
        let signature = try key.signES256(message)
        let r = Array(signature[0..<32]), s = Array(signature[32..<64])
        let zero = [UInt8](repeating: 0, count: 32), ones = [UInt8](repeating: 0xFF, count: 32)
        let orderPlusR = Self.add(Self.order, r)   // ≡ r mod n, but not in [1, n − 1] (when it fits 32 bytes)
        for (name, candidate) in [("r = 0", zero + s), ("s = 0", r + zero), ("r = n", Self.order + s), ("s = n", r + Self.order),
                                  ("r = 2^256 - 1", ones + s), ("s = 2^256 - 1", r + ones), ("both 0", zero + zero),
                                  ("s = n + s", r + Self.add(Self.order, s)), ("r = n + r", orderPlusR + s)] {
            assertSameVerdict(publicKey, candidate, digest, expected: false, name)
        }
        // Wrong lengths never reach either path.
        XCTAssertFalse(publicKey.verifyES256(rawSignature: Array(signature.prefix(63)), message: message))
        XCTAssertFalse(publicKey.verifyES256(rawSignature: signature + [0], message: message))
        XCTAssertEqual(publicKey.verifyDigest(rawSignature: signature, digest: Array(digest.prefix(31)), fixedBase: true), false)
    }

    /// Digests the hash never yields in practice but the arithmetic must handle as OpenSSL does: e = 0 and e = n
    /// (u1 = 0: u1·G is the point at infinity), e > n. Signed by the openssl CLI over the raw digest.
    func testEdgeDigestsSignedByOpenSSL() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fixedbase-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try Subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "key.p8"],
                               in: directory.path)
        let pem = String(decoding: try Data(contentsOf: directory.appendingPathComponent("key.p8")), as: UTF8.self)
        let publicKey = try P256.PrivateKey(pem: pem).publicKey
        XCTAssertTrue(publicKey.prepareFixedBase())
        let digests: [(String, [UInt8])] = [("zero", [UInt8](repeating: 0, count: 32)), ("n", Self.order),
                                            ("all ones", [UInt8](repeating: 0xFF, count: 32)), ("one", [UInt8](repeating: 0, count: 31) + [1])]
        for (name, digest) in digests {
            try Data(digest).write(to: directory.appendingPathComponent("digest"))
            _ = try Subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", "key.p8", "-in", "digest", "-out", "sig.der"], in: directory.path)
            let der = [UInt8](try Data(contentsOf: directory.appendingPathComponent("sig.der")))
            let raw = try P256.rawSignature(fromDER: der)
            assertSameVerdict(publicKey, raw, digest, expected: true, "digest \(name)")
            var other = digest
            other[31] ^= 0x02
            assertSameVerdict(publicKey, raw, other, expected: false, "digest \(name), tampered")
        }
    }

    func testTableIsBuiltAfterTheThreshold() throws {
        let key = try P256.PrivateKey()
        let publicKey = try key.publicKey
        let message = Array("threshold".utf8)
        let signature = try key.signES256(message)
        for _ in 1..<P256.PublicKey.fixedBaseAfterVerifications {
            XCTAssertTrue(publicKey.verifyES256(rawSignature: signature, message: message))
        }
        XCTAssertFalse(publicKey.usesFixedBase)
        XCTAssertTrue(publicKey.verifyES256(rawSignature: signature, message: message))
        XCTAssertTrue(publicKey.usesFixedBase)
        XCTAssertTrue(publicKey.verifyES256(rawSignature: signature, message: message))
        XCTAssertFalse(publicKey.verifyES256(rawSignature: signature, message: Array("thresholD".utf8)))
        // DER signatures (promotional offers) keep EVP_PKEY_verify and agree.
        XCTAssertTrue(publicKey.verifyDER(signature: P256.derSignature(fromRaw: signature), message: message))
    }

    /// The binary inverse mod n (proved by OpenSSL's BN_mod_mul before each use in production) on edges and at random.
    func testInverseModOrder() {
        let n = Self.order
        var candidates: [[UInt8]] = [[UInt8](repeating: 0, count: 31) + [1], [UInt8](repeating: 0, count: 31) + [2],
                                     Self.subtract(n, [UInt8](repeating: 0, count: 31) + [1]),
                                     Self.subtract(n, [UInt8](repeating: 0, count: 31) + [2]),
                                     [0x80] + [UInt8](repeating: 0, count: 31), [0x7F] + [UInt8](repeating: 0xFF, count: 31),
                                     [UInt8](repeating: 0, count: 24) + [UInt8](repeating: 0xFF, count: 8)]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            var random = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            random[0] &= 0x7F   // < n
            if random.allSatisfy({ $0 == 0 }) { random[31] = 1 }
            candidates.append(random)
        }
        for s in candidates {
            let inverse = s.withUnsafeBufferPointer { buffer in
                buffer.baseAddress.map { P256.FixedBaseVerifier.inverseModOrder($0) } ?? []
            }
            XCTAssertEqual(inverse.count, 32)
            XCTAssertTrue(P256.FixedBaseVerifier.productModOrderIsOne(s, inverse), "s = \(s)")
        }
        XCTAssertFalse(P256.FixedBaseVerifier.productModOrderIsOne(candidates[1], candidates[1]))
    }

    // MARK: Helpers

    private func assertSameVerdict(_ key: P256.PublicKey, _ signature: [UInt8], _ digest: [UInt8], expected: Bool, _ what: String,
                                   file: StaticString = #filePath, line: UInt = #line) {
        let reference = key.verifyDigest(rawSignature: signature, digest: digest, fixedBase: false)
        let table = key.verifyDigest(rawSignature: signature, digest: digest, fixedBase: true)
        XCTAssertEqual(reference, expected, "EVP_PKEY_verify, \(what)", file: file, line: line)
        XCTAssertEqual(table, expected, "fixed base, \(what)", file: file, line: line)
    }

    /// a − b for 32-byte big-endian numbers, a ≥ b.
    private static func subtract(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in stride(from: 31, through: 0, by: -1) {
            var digit = Int(a[index]) - Int(b[index]) - borrow
            borrow = digit < 0 ? 1 : 0
            if digit < 0 { digit += 256 }
            result[index] = UInt8(digit)
        }
        return result
    }

    /// a + b for 32-byte big-endian numbers, truncated to 32 bytes (the overflowing cases are out of range anyway).
    private static func add(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: 32)
        var carry = 0
        for index in stride(from: 31, through: 0, by: -1) {
            let digit = Int(a[index]) + Int(b[index]) + carry
            carry = digit >> 8
            result[index] = UInt8(digit & 0xFF)
        }
        return carry == 0 ? result : [UInt8](repeating: 0xFF, count: 32)
    }

    private static func hexBytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { index in
            UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) ?? 0
        }
    }
}
