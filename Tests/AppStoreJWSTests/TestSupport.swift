import Foundation
import Primitives
import XCTest
@testable import AppStoreJWS

/// Paths and helpers shared by the AppStoreJWS tests.
enum Fixture {
    static let vectors = TestPaths.vectors
    static let shared = vectors.deletingLastPathComponent()
    static let mocks = vectors.appendingPathComponent("apple-library-mocks")

    static func text(_ url: URL) throws -> String {
        try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func vector(_ name: String) throws -> String { try text(vectors.appendingPathComponent(name)) }

    /// The committed test PKI's root as trust anchor.
    static func testRoots() throws -> TrustedRoots { try TrustedRoots(contentsOf: [TestPKI.root]) }

    static func pkiCert(_ name: String) -> String { TestPKI.file(name) }
    static func variant(_ name: String) -> String { TestPKI.variant(name) }
    static var validChain: [String] { TestPKI.validChain }

    /// Mints a JWS with the test PKI (`TestPKI`, through `Tests/Fixtures/pki/sign-jws`).
    static func sign(_ payload: String, x5c: [String]? = nil, key: String? = nil, alg: String? = nil, header: String? = nil) throws -> String {
        try TestPKI.sign(payload, x5c: x5c ?? [], key: key, alg: alg, header: header)
    }

    /// A complete transaction payload (every required field) with overrides.
    static func transactionPayload(bundleId: String = "com.bouncer.test", environment: String = "Sandbox",
                                   signedDate: Int64 = 1_760_000_000_000, transactionId: String = "2000000123456789",
                                   extra: String = "") -> String {
        """
        {"transactionId":"\(transactionId)","originalTransactionId":"2000000000000001","bundleId":"\(bundleId)",\
        "productId":"pro.monthly","purchaseDate":1759999000000,"type":"Auto-Renewable Subscription",\
        "inAppOwnershipType":"PURCHASED","environment":"\(environment)","signedDate":\(signedDate),\
        "price":1990,"currency":"EUR","storefront":"FRA"\(extra)}
        """
    }

    static func segments(_ jws: String) -> [String] { jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }

    static func b64url(_ bytes: [UInt8]) -> String { Base64.encodeURL(bytes) }
    static func b64urlDecode(_ text: String) -> [UInt8]? {
        var copy = text
        return copy.withUTF8 { Base64.decodeURL($0) }
    }
}

/// Asserts that `body` throws a `VerificationError` with exactly this code and step.
func XCTAssertVerification<T>(_ body: @autoclosure () throws -> T, code: VerificationError.Code, step: VerificationError.Step,
                              reasonContains: String? = nil, file: StaticString = #filePath, line: UInt = #line) {
    do {
        _ = try body()
        XCTFail("expected \(code.rawValue) at \(step.rawValue), but verification succeeded", file: file, line: line)
    } catch let error as VerificationError {
        XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
        XCTAssertEqual(error.step, step, "\(error)", file: file, line: line)
        if let reasonContains {
            XCTAssertTrue(error.reason.contains(reasonContains), "reason \"\(error.reason)\" lacks \"\(reasonContains)\"", file: file, line: line)
        }
        XCTAssertFalse(error.isRetryable, file: file, line: line)
    } catch {
        XCTFail("unexpected error type \(error)", file: file, line: line)
    }
}
