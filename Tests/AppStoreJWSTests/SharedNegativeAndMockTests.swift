import Foundation
import XCTest
@testable import AppStoreJWS

/// Tests/Fixtures/apple/test-vectors/negative (mutations of a real notification) and Apple's library mocks,
/// with Apple's status names mapped onto our codes as the vectors' README prescribes.
final class SharedNegativeAndMockTests: XCTestCase {
    let lokiSandbox = VerificationPolicy(bundleId: "com.loki-project.loki-messenger", environments: [.sandbox])

    func testNegativeVectors() throws {
        let verifier = SignedDataVerifier(roots: .apple)
        func negative(_ name: String) throws -> String { try Fixture.vector("negative/" + name) }
        // Signature failures come before claims: never BUNDLE_ID_MISMATCH for a tampered payload.
        XCTAssertVerification(try verifier.verifyNotification(try negative("tampered-payload-bundleId.jws"), policy: lokiSandbox),
                              code: .jwsVerificationFailed, step: .signature)
        XCTAssertVerification(try verifier.verifyNotification(try negative("signature-bitflip.jws"), policy: lokiSandbox),
                              code: .jwsVerificationFailed, step: .signature)
        XCTAssertVerification(try verifier.verifyNotification(try negative("signature-as-DER.jws"), policy: lokiSandbox),
                              code: .jwsVerificationFailed, step: .signature, reasonContains: "64-byte raw")
        XCTAssertVerification(try verifier.verifyNotification(try negative("x5c-length-2.jws"), policy: lokiSandbox),
                              code: .invalidJWSFormat, step: .x5c, reasonContains: "exactly 3")
        XCTAssertVerification(try verifier.verifyNotification(try negative("alg-HS256.jws"), policy: lokiSandbox),
                              code: .unsupportedAlgorithm, step: .algorithm, reasonContains: "HS256")
        XCTAssertVerification(try verifier.verifyNotification(try negative("x5c-missing.jws"), policy: lokiSandbox),
                              code: .invalidJWSFormat, step: .x5c)
        XCTAssertVerification(try verifier.verifyNotification(try negative("four-segments.jws"), policy: lokiSandbox),
                              code: .invalidJWSFormat, step: .split)
        XCTAssertVerification(try verifier.verifyNotification("a.b.c.d", policy: lokiSandbox), code: .invalidJWSFormat, step: .split)
        XCTAssertVerification(try verifier.verifyNotification("a.b.c", policy: lokiSandbox), code: .invalidJWSFormat, step: .split)
    }

    // MARK: Apple's mock chain (root testCA.der, X509_STRICT off: the mock CA lacks key identifiers)

    func mockVerifier() throws -> SignedDataVerifier {
        let roots = try TrustedRoots(contentsOf: [Fixture.mocks.appendingPathComponent("certs/testCA.der").path])
        return SignedDataVerifier(roots: roots, chainCacheCapacity: 16, strictX509: false, now: { Date(timeIntervalSince1970: 1_761_962_975) })
    }

    func mock(_ name: String) throws -> String { try Fixture.text(Fixture.mocks.appendingPathComponent("mock_signed_data/" + name)) }

    func testAppleMockNotificationVerdicts() throws {
        let verifier = try mockVerifier()
        let notification = try mock("testNotification")
        let sandbox = VerificationPolicy(bundleId: "com.example", environments: [.sandbox])
        let result = try verifier.verifyNotification(notification, policy: sandbox)
        XCTAssertEqual(result.notification.notificationType, .test)
        XCTAssertEqual(result.notification.data?.appAppleId, 1234)
        XCTAssertEqual(result.notification.notificationUUID, "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")
        XCTAssertVerification(try verifier.verifyNotification(notification, policy: VerificationPolicy(bundleId: "com.example", environments: [.production], appAppleId: 1234)),
                              code: .environmentNotAllowed, step: .claims)
        XCTAssertVerification(try verifier.verifyNotification(notification, policy: VerificationPolicy(bundleId: "com.example", environments: [.production], appAppleId: 1235)),
                              code: .appAppleIdMismatch, step: .claims)
        // No signedDate: checked at "now" (inside the mock chain's 2033 expiry), then the wrong bundle.
        XCTAssertVerification(try verifier.verifyNotification(try mock("wrongBundleId"), policy: sandbox), code: .bundleIdMismatch, step: .claims)
        XCTAssertVerification(try verifier.verifyNotification(try mock("missingX5CHeaderClaim"), policy: sandbox), code: .invalidJWSFormat, step: .x5c)
    }

    func testAppleMockTransactionAndRenewalInfo() throws {
        let verifier = try mockVerifier()
        let sandbox = VerificationPolicy(bundleId: "com.example", environments: [.sandbox])
        // Apple's mock transaction carries only environment, bundleId and signedDate. Its chain and
        // signature verify, and its claims match; our stricter typed decode then names the first
        // missing required field (Apple's model makes every field optional).
        XCTAssertVerification(try verifier.verifyTransaction(try mock("transactionInfo"), policy: sandbox),
                              code: .invalidJWSFormat, step: .payload, reasonContains: "transactionId")
        XCTAssertVerification(try verifier.verifyTransaction(try mock("transactionInfo"), policy: VerificationPolicy(bundleId: "com.example.x", environments: [.sandbox])),
                              code: .bundleIdMismatch, step: .claims)
        let renewal = try verifier.verifyRenewalInfo(try mock("renewalInfo"), policy: sandbox)
        XCTAssertEqual(renewal.renewalInfo.environment, .sandbox)
        XCTAssertEqual(renewal.renewalInfo.signedDate, Date(appleMilliseconds: 1_672_956_154_000))
    }

    func testAppleMockChainsWithWrongMarkerOIDs() throws {
        let verifier = try mockVerifier()
        let certs = Fixture.mocks.appendingPathComponent("certs")
        func pem(_ name: String) throws -> [UInt8] {
            try XCTUnwrap(PEM.certificates(in: [UInt8](try Data(contentsOf: certs.appendingPathComponent(name))))?.first)
        }
        func check(_ leaf: String, _ intermediate: String, at seconds: Int64) throws -> Result<Void, VerificationError> {
            let leafDER = try pem(leaf), intermediateDER = try pem(intermediate)
            do {
                _ = try verifier.validateChain(leafDER: leafDER, intermediateDER: intermediateDER, at: seconds,
                                               effective: Date(timeIntervalSince1970: TimeInterval(seconds)), source: .signedDate)
                return .success(())
            } catch { return .failure(error) }
        }
        XCTAssertNoThrow(try check("testLeaf.pem", "testIntermediate.pem", at: 1_761_962_975).get())
        XCTAssertEqual(try check("testLeaf.pem", "testInvalidOIDIntermediate.pem", at: 1_761_962_975).error?.step, .oid)
        XCTAssertEqual(try check("testInvalidIntermediateLeaf.pem", "testInvalidOIDIntermediate.pem", at: 1_761_962_975).error?.step, .oid)
        XCTAssertEqual(try check("testInvalidOIDLeaf.pem", "testIntermediate.pem", at: 1_761_962_975).error?.step, .oid)
        XCTAssertEqual(try check("testLeaf.pem", "testIntermediate.pem", at: 2_280_946_846).error?.step, .validity)
        // The same valid mock chain against the real Apple root: untrusted.
        let apple = SignedDataVerifier(roots: .apple, chainCacheCapacity: 0, strictX509: false, now: { Date() })
        let leafDER = try pem("testLeaf.pem"), intermediateDER = try pem("testIntermediate.pem")
        XCTAssertThrowsError(try apple.validateChain(leafDER: leafDER, intermediateDER: intermediateDER, at: 1_761_962_975, effective: Date(), source: .signedDate)) { error in
            XCTAssertEqual((error as? VerificationError)?.step, .chain)
        }
        // With X509_STRICT on (the default), Apple's mock CA fails strict checks.
        let strict = SignedDataVerifier(roots: try TrustedRoots(contentsOf: [certs.appendingPathComponent("testCA.der").path]), chainCacheCapacity: 0)
        XCTAssertThrowsError(try strict.validateChain(leafDER: leafDER, intermediateDER: intermediateDER, at: 1_761_962_975, effective: Date(), source: .signedDate)) { error in
            XCTAssertEqual((error as? VerificationError)?.code, .jwsVerificationFailed)
        }
    }

    // MARK: Xcode (StoreKit Testing)

    func xcode(_ name: String) throws -> String { try Fixture.text(Fixture.mocks.appendingPathComponent("xcode/" + name)) }
    let birds = "com.example.naturelab.backyardbirds.example"

    func testXcodeDataNeedsAllowXcode() throws {
        let verifier = SignedDataVerifier(roots: .apple)
        let transaction = try xcode("xcode-signed-transaction")
        for environments: Set<AppStoreEnvironment> in [[.production], [.sandbox, .production], [.xcode]] {
            XCTAssertVerification(try verifier.verifyTransaction(transaction, policy: VerificationPolicy(bundleId: birds, environments: environments)),
                                  code: .environmentNotAllowed, step: .claims, reasonContains: "Xcode")
        }
        XCTAssertVerification(try verifier.verifyAppTransaction(try xcode("xcode-signed-app-transaction"), policy: VerificationPolicy(bundleId: birds)),
                              code: .environmentNotAllowed, step: .claims)
        // allow_xcode on a Production-only project: test data still never counts.
        for environments: Set<AppStoreEnvironment> in [[.production], [.production, .xcode], []] {
            let policy = VerificationPolicy(bundleId: birds, environments: environments, allowXcode: true)
            XCTAssertVerification(try verifier.verifyTransaction(transaction, policy: policy), code: .environmentNotAllowed, step: .claims,
                                  reasonContains: "Xcode (StoreKit Testing) data needs allow_xcode and Sandbox among the project's environments")
            XCTAssertVerification(try verifier.verifyRenewalInfo(try xcode("xcode-signed-renewal-info"), policy: policy),
                                  code: .environmentNotAllowed, step: .claims)
        }
    }

    func testXcodeDataWithAllowXcode() throws {
        let verifier = SignedDataVerifier(roots: .apple)
        let policy = VerificationPolicy(bundleId: birds, environments: [.sandbox], allowXcode: true)
        let transaction = try verifier.verifyTransaction(try xcode("xcode-signed-transaction"), policy: policy)
        XCTAssertEqual(transaction.transaction.environment, .xcode)
        XCTAssertEqual(transaction.transaction.transactionId, "0")
        XCTAssertTrue(transaction.details.isXcodeSigned)
        XCTAssertEqual(transaction.transaction.purchaseDate, Date(appleMilliseconds: 1_697_679_936_049))   // fractional ms truncated
        XCTAssertEqual(transaction.transaction.offerType, .introductory)
        let renewal = try verifier.verifyRenewalInfo(try xcode("xcode-signed-renewal-info"), policy: policy)
        XCTAssertEqual(renewal.renewalInfo.autoRenewStatus, .on)
        XCTAssertEqual(renewal.renewalInfo.productId, "pass.premium")
        let app = try verifier.verifyAppTransaction(try xcode("xcode-signed-app-transaction"), policy: policy)
        XCTAssertEqual(app.appTransaction.receiptType, .xcode)
        XCTAssertNil(app.appTransaction.appAppleId)
        XCTAssertEqual(app.appTransaction.originalPurchaseDate, Date(appleMilliseconds: -62_135_769_600_000))
        // Still the right app only.
        XCTAssertVerification(try verifier.verifyTransaction(try xcode("xcode-signed-transaction"), policy: VerificationPolicy(bundleId: "other", allowXcode: true)),
                              code: .bundleIdMismatch, step: .claims)
        // The signature is still checked with x5c[0]'s key.
        var parts = Fixture.segments(try xcode("xcode-signed-transaction"))
        var signature = try XCTUnwrap(Fixture.b64urlDecode(parts[2]))
        signature[10] ^= 0x01
        parts[2] = Fixture.b64url(signature)
        XCTAssertVerification(try verifier.verifyTransaction(parts.joined(separator: "."), policy: policy), code: .jwsVerificationFailed, step: .signature)
    }
}

extension Result {
    var error: Failure? { if case .failure(let error) = self { return error } else { return nil } }
}
