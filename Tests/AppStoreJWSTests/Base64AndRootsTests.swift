import Domain
import Foundation
import XCTest
@testable import AppStoreJWS
import Crypto

final class Base64AndRootsTests: XCTestCase {
    // The base64 tests moved to PrimitivesTests.Base64Tests with the decoders.

    func testDERSignatureEncoding() {
        let raw = [UInt8](repeating: 0x80, count: 32) + [0x00, 0x00, 0x01] + [UInt8](repeating: 0x7F, count: 29)
        let der = P256.derSignature(fromRaw: raw)
        XCTAssertEqual(Array(der.prefix(4)), [0x30, 67, 0x02, 33])
        XCTAssertEqual(der[4], 0x00)                    // sign byte before a high-bit r
        XCTAssertEqual(Array(der[37...39]), [0x02, 30, 0x01])   // s with leading zeros stripped
        XCTAssertEqual(der.count, 2 + 35 + 32)
        XCTAssertEqual(P256.derSignature(fromRaw: [UInt8](repeating: 0, count: 64)), [0x30, 6, 0x02, 1, 0, 0x02, 1, 0])
    }

    func testTrustedRootsLoading() throws {
        let pem = Fixture.pkiCert("root.pem"), der = Fixture.pkiCert("root.der")
        let fromPEM = try TrustedRoots(contentsOf: [pem])
        let fromDER = try TrustedRoots(contentsOf: [der])
        XCTAssertEqual(fromPEM.fingerprints, fromDER.fingerprints)
        XCTAssertThrowsError(try TrustedRoots(contentsOf: [])) { XCTAssertTrue("\($0)".contains("at least one")) }
        XCTAssertThrowsError(try TrustedRoots(contentsOf: ["/nonexistent/root.pem"])) { XCTAssertTrue("\($0)".contains("cannot read")) }
        XCTAssertThrowsError(try TrustedRoots(contentsOf: [Fixture.pkiCert("leaf.key")]))
        XCTAssertThrowsError(try TrustedRoots(derCertificates: [[0x30, 0x03, 0x02, 0x01, 0x00]]))
        XCTAssertEqual(TrustedRoots.paths(fromEnvironmentValue: "/a.pem::/b.der:"), ["/a.pem", "/b.der"])
        XCTAssertEqual(try TrustedRoots.fromEnvironment([:]).fingerprints, TrustedRoots.apple.fingerprints)
        XCTAssertEqual(try TrustedRoots.fromEnvironment(["BOUNCER_ROOT_CERTIFICATES": "\(pem):\(der)"]).fingerprints.count, 2)
        XCTAssertThrowsError(try TrustedRoots.fromEnvironment(["BOUNCER_ROOT_CERTIFICATES": "/missing.pem"]))
    }

    func testUnknownEnumValuesArePreserved() {
        XCTAssertEqual(NotificationType(rawValue: "SOMETHING_NEW").rawValue, "SOMETHING_NEW")
        XCTAssertEqual(NotificationType(rawValue: "DID_RENEW"), .didRenew)
        XCTAssertEqual(AppStoreEnvironment(rawValue: "Production"), .production)
        XCTAssertEqual(OfferType(rawValue: 4), .winBack)
        XCTAssertEqual(ProductType.nonRenewing.rawValue, "Non-Renewing Subscription")
    }

    func testEveryInternalStepMapsToOneOfTheFiveContractSteps() {
        let table: [(VerificationError.Step, String)] = [
            (.split, "format"), (.payload, "format"),
            (.header, "header"), (.algorithm, "header"), (.x5c, "header"),
            (.chain, "chain"), (.validity, "chain"), (.oid, "chain"),
            (.signature, "signature"),
            (.claims, "claims"),
            (VerificationError.Step(rawValue: "future"), "format"),
        ]
        for (step, contract) in table {
            XCTAssertEqual(step.contractName, contract, step.rawValue)
        }
    }

    func testErrorDescriptionsAreStable() {
        let error = VerificationError(code: .bundleIdMismatch, step: .claims, reason: "r", debugDetail: "openssl detail")
        XCTAssertEqual(error.description, "BUNDLE_ID_MISMATCH (claims): r")
        XCTAssertEqual(error.debugDescription, "BUNDLE_ID_MISMATCH (claims): r [openssl detail]")
        XCTAssertEqual([VerificationError.Code.invalidJWSFormat, .unsupportedAlgorithm, .jwsVerificationFailed, .bundleIdMismatch,
                        .environmentNotAllowed, .appAppleIdMismatch].map(\.rawValue),
                       ["INVALID_JWS_FORMAT", "JWS_UNSUPPORTED_ALGORITHM", "JWS_VERIFICATION_FAILED", "BUNDLE_ID_MISMATCH",
                        "ENVIRONMENT_NOT_ALLOWED", "APP_APPLE_ID_MISMATCH"])
    }
}
