import Crypto
import Dispatch
import XCTest

/// PBKDF2-HMAC-SHA256 against RFC 7914 §11's vectors and the widely published ones for "password"/"salt";
/// HOTP and TOTP against RFC 4226 appendix D and RFC 6238 appendix B (SHA-1).
final class PBKDF2Tests: XCTestCase {
    func testRFC7914Vectors() throws {
        XCTAssertEqual(hex(try XCTUnwrap(PBKDF2.sha256(password: Array("passwd".utf8), salt: Array("salt".utf8),
                                                      iterations: 1, length: 64))),
                       "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
                           + "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783")
        XCTAssertEqual(hex(try XCTUnwrap(PBKDF2.sha256(password: Array("Password".utf8), salt: Array("NaCl".utf8),
                                                      iterations: 80_000, length: 64))),
                       "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"
                           + "a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d")
    }

    func testPasswordSaltVectors() throws {
        let cases: [(Int, String)] = [
            (1, "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b"),
            (2, "ae4d0c95af6b46d32d0adff928f06dd02a303f8ef3c251dfd6e2d85a95474c43"),
            (4096, "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a"),
        ]
        for (iterations, expected) in cases {
            let key = try XCTUnwrap(PBKDF2.sha256(password: Array("password".utf8), salt: Array("salt".utf8),
                                                  iterations: iterations))
            XCTAssertEqual(hex(key), expected, "c = \(iterations)")
        }
    }

    /// What one sign-in's derivation costs at the production count (printed, for the README's figure).
    func testCostAtTheProductionIterationCount() throws {
        let start = DispatchTime.now().uptimeNanoseconds
        _ = try XCTUnwrap(PBKDF2.sha256(password: Array("correct horse battery".utf8), salt: [UInt8](repeating: 1, count: 16),
                                        iterations: 210_000))
        let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        print("PBKDF2-HMAC-SHA256, 210000 iterations: \(Int(ms)) ms")
    }

    func testOutOfRangeParametersAreRefused() {
        XCTAssertNil(PBKDF2.sha256(password: [1], salt: [2], iterations: 0))
        XCTAssertNil(PBKDF2.sha256(password: [1], salt: [2], iterations: 1, length: 0))
        XCTAssertNotNil(PBKDF2.sha256(password: [], salt: [], iterations: 1))
    }

    /// RFC 4226 appendix D: HOTP of "12345678901234567890" for counters 0–9.
    func testHOTPVectors() {
        let secret = Array("12345678901234567890".utf8)
        let expected = ["755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871",
                        "520489"]
        for (counter, code) in expected.enumerated() {
            XCTAssertEqual(OneTimePassword.hotp(secret: secret, counter: UInt64(counter)), code, "counter \(counter)")
        }
    }

    /// RFC 6238 appendix B, the SHA-1 rows (8 digits, 30-second steps).
    func testTOTPVectors() {
        let secret = Array("12345678901234567890".utf8)
        let rows: [(Double, String)] = [
            (59, "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"),
            (1_234_567_890, "89005924"), (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
        ]
        for (time, code) in rows {
            let step = OneTimePassword.step(unixSeconds: time)
            XCTAssertEqual(OneTimePassword.hotp(secret: secret, counter: step, digits: 8), code, "T = \(time)")
        }
        XCTAssertEqual(OneTimePassword.step(unixSeconds: 59), 1)
        XCTAssertEqual(OneTimePassword.step(unixSeconds: -5), 0)
    }

    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
