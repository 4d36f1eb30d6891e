import Crypto
import Foundation
import XCTest
@testable import AppStoreJWS

/// Apple's marker and end-entity rules, shared by the JWS verifier (the leaf is `leaf`) and the receipt verifier (the
/// leaf is `signer`): each rule once, in the caller's words.
final class AppleSigningChainTests: XCTestCase {
    func certificate(_ path: String) throws -> Certificate {
        let pem = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        return try XCTUnwrap(Certificate(der: try XCTUnwrap(PEM.certificates(in: pem)?.first)))
    }

    func testEachRuleNamesTheLeafAsTheCallerDoes() throws {
        let leaf = try certificate(Fixture.pkiCert("leaf.pem"))
        let intermediate = try certificate(Fixture.pkiCert("intermediate.pem"))
        XCTAssertNil(AppleSigningChain.problem(leaf: leaf, intermediate: intermediate, leafName: "leaf"))
        let cases: [(leaf: String, intermediate: String?, reason: String)] = [
            ("leaf-oid-6.11.2.pem", nil,
             "certificate lacks Apple's receipt-signing marker OID 1.2.840.113635.100.6.11.1"),
            ("leaf-under-wrong-oid-intermediate.pem", "intermediate-oid-6.2.2.pem",
             "intermediate certificate lacks Apple's WWDR marker OID 1.2.840.113635.100.6.2.1"),
            ("leaf-no-digital-signature.pem", nil, "certificate keyUsage does not allow digitalSignature"),
        ]
        for (leafFile, intermediateFile, reason) in cases {
            let leaf = try certificate(Fixture.variant(leafFile))
            let intermediate = try intermediateFile.map { try certificate(Fixture.variant($0)) } ?? intermediate
            for name in ["leaf", "signer"] {
                let expected = reason.hasPrefix("intermediate") ? reason : "\(name) \(reason)"
                XCTAssertEqual(AppleSigningChain.problem(leaf: leaf, intermediate: intermediate, leafName: name), expected,
                               leafFile)
            }
        }
        // An intermediate in the leaf's place breaks several rules: the first one broken is the one named.
        XCTAssertEqual(AppleSigningChain.problem(leaf: intermediate, intermediate: intermediate, leafName: "signer"),
                       "signer certificate lacks Apple's receipt-signing marker OID 1.2.840.113635.100.6.11.1")
    }
}
