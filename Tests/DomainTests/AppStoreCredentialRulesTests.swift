import Domain
import XCTest

final class AppStoreCredentialRulesTests: XCTestCase {
    let pem = "-----BEGIN PRIVATE KEY-----\nMIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEH\n-----END PRIVATE KEY-----\n"

    func paths(_ issuer: String, _ keyId: String, _ pem: String) -> [[String]] {
        AppStoreCredentialRules.problems(issuerId: issuer, keyId: keyId, privateKeyPEM: pem).map(\.path)
    }

    func testAppleShapedValuesPass() {
        XCTAssertEqual(paths("57246542-96fe-1a63-e053-0824d011072a", "2X9R4HXF34", pem), [])
        XCTAssertEqual(paths("57246542-96FE-1A63-E053-0824D011072A", "0000000000", "\n\n" + pem + "  \n"), [])
    }

    func testIssuerIdMustBeAUUID() {
        for bad in ["", "57246542", "57246542-96fe-1a63-e053-0824d011072", "{57246542-96fe-1a63-e053-0824d011072a}",
                    "57246542-96fe-1a63-e053-0824d011072a ", "g7246542-96fe-1a63-e053-0824d011072a",
                    "5724654296fe1a63e0530824d011072a"] {
            XCTAssertEqual(paths(bad, "2X9R4HXF34", pem), [["issuer_id"]], bad)
        }
    }

    func testKeyIdIsTenUppercaseLettersOrDigits() {
        for bad in ["", "2X9R4HXF3", "2X9R4HXF345", "2x9r4hxf34", "2X9R4HXF3-", "2X9R4HXF3 ", "2X9R4HXF3É",
                    "２X9R4HXF34"] {
            XCTAssertEqual(paths("57246542-96fe-1a63-e053-0824d011072a", bad, pem), [["key_id"]], bad)
        }
    }

    func testPrivateKeyMustBeAPKCS8PEM() {
        let messages = { (pem: String) in AppStoreCredentialRules.problems(privateKeyPEM: pem).map(\.message) }
        XCTAssertEqual(messages(""), ["String must contain at least 1 character(s)"])
        XCTAssertEqual(messages(" \n"), ["String must contain at least 1 character(s)"])
        XCTAssertEqual(messages("MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEH"),
                       ["Expected a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----)"])
        XCTAssertEqual(messages("-----BEGIN PRIVATE KEY-----\nMIG"),
                       ["Expected a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----)"], "truncated")
        XCTAssertEqual(messages("-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----"),
                       ["Expected a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----)"])
        XCTAssertEqual(messages("-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----"),
                       ["Expected a PKCS#8 PEM (BEGIN PRIVATE KEY), got a SEC1 EC key (BEGIN EC PRIVATE KEY); "
                        + "send the .p8 file unchanged"])
        XCTAssertEqual(messages(pem + String(repeating: "A", count: 8192)),
                       ["String must contain at most 8192 character(s)"])
        XCTAssertEqual(messages(pem), [])
    }

    func testEveryBrokenFieldIsReportedInOrder() {
        XCTAssertEqual(paths("x", "y", "z"), [["issuer_id"], ["key_id"], ["private_key"]])
    }
}
