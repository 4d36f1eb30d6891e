import XCTest
import Crypto

/// `Digest.sha256` is the only SHA-256 in Bouncer: FIPS 180-2 vectors through every input shape it accepts.
final class DigestTests: XCTestCase {
    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    func testSHA256MatchesFIPSVectors() {
        XCTAssertEqual(hex(Digest.sha256([UInt8]())), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(hex(Digest.sha256("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(hex(Digest.sha256(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    func testSHA256OfNonContiguousCollectionEqualsContiguous() {
        // Repeated<UInt8> has no contiguous storage: exercises the copying path. One million "a" (FIPS 180-2).
        let million = repeatElement(UInt8(ascii: "a"), count: 1_000_000)
        XCTAssertNil(million.withContiguousStorageIfAvailable { _ in 0 })
        XCTAssertEqual(hex(Digest.sha256(million)), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        XCTAssertEqual(Digest.sha256(million), Digest.sha256(Array(million)))
    }

    func testSHA256OfRawBufferEqualsCollection() {
        let bytes = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let viaBuffer = bytes.withUnsafeBytes { Digest.sha256($0) }
        XCTAssertEqual(viaBuffer.count, 32)
        XCTAssertEqual(viaBuffer, Digest.sha256(bytes))
        XCTAssertEqual(Digest.sha256(bytes[...]), Digest.sha256(bytes))
    }

    /// SHA-256(prefix ‖ rest) from an absorbed prefix equals hashing the whole, around every block boundary, and one
    /// prefix serves any number of continuations (the chain cache's header texts).
    func testSHA256PrefixContinuesLikeTheWhole() throws {
        let bytes = (0..<3_500).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) }
        for split in [0, 1, 55, 56, 63, 64, 65, 127, 128, 3_300, 3_499, 3_500] {
            let prefix = try XCTUnwrap(bytes.withUnsafeBytes { Digest.SHA256Prefix(prefix: UnsafeRawBufferPointer(rebasing: $0[0..<split])) })
            for end in [split, min(split + 1, bytes.count), bytes.count] {
                let continued = bytes.withUnsafeBytes { prefix.digest(continuingWith: UnsafeRawBufferPointer(rebasing: $0[split..<end])) }
                XCTAssertEqual(continued, Digest.sha256(bytes[0..<end]), "prefix \(split), end \(end)")
            }
        }
        let abc = try XCTUnwrap("ab".utf8.withContiguousStorageIfAvailable { Digest.SHA256Prefix(prefix: UnsafeRawBufferPointer($0)) } ?? nil)
        XCTAssertEqual(Array("c".utf8).withUnsafeBytes { abc.digest(continuingWith: $0) }.map(hex),
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
