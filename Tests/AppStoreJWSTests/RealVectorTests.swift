import Foundation
import XCTest
@testable import AppStoreJWS

/// The 19 real Apple-signed JWS in Tests/Fixtures/apple/test-vectors, verified with the embedded Apple roots at
/// their signedDate, compared field by field with vectors.json.
final class RealVectorTests: XCTestCase {
    struct Vector {
        var file: String
        var kind: String
        var bundleId: String?
        var environment: String
        var appAppleId: Int64?
        var notificationType: String?
        var subtype: String?
        var signedDate: Int64?
        var chainAtSignedDate: String
    }

    static func loadVectors() throws -> [Vector] {
        let data = try Data(contentsOf: Fixture.vectors.appendingPathComponent("vectors.json"))
        let list = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        return list.map { entry in
            Vector(file: entry["file"] as? String ?? "", kind: entry["kind"] as? String ?? "",
                   bundleId: entry["bundleId"] as? String, environment: entry["environment"] as? String ?? "",
                   appAppleId: (entry["appAppleId"] as? NSNumber)?.int64Value,
                   notificationType: entry["notificationType"] as? String, subtype: entry["subtype"] as? String,
                   signedDate: (entry["signedDate"] as? NSNumber)?.int64Value,
                   chainAtSignedDate: entry["chainAtSignedDate"] as? String ?? "")
        }
    }

    /// A fixed "now" after the 2021 leaf expired (the vectors README's 2026-11-21).
    static let now = Date(timeIntervalSince1970: 1_795_000_000)

    func testEveryRealVectorVerifiesAtItsSignedDateWithTheEmbeddedRoots() throws {
        let vectors = try Self.loadVectors()
        XCTAssertEqual(vectors.count, 19)
        let verifier = SignedDataVerifier(roots: .apple, now: { Self.now })
        var verifiedCount = 0
        for vector in vectors {
            let jws = try Fixture.vector(vector.file)
            let environment = AppStoreEnvironment(rawValue: vector.environment)
            let policy = VerificationPolicy(bundleId: vector.bundleId ?? "unused.for.renewal.info", environments: [environment],
                                            appAppleId: environment == .production ? vector.appAppleId : nil)
            if vector.chainAtSignedDate != "OK" {
                // The early-2022 notification has no signedDate: checked at now, its 2021 leaf has expired.
                XCTAssertVerification(try verifier.verifyNotification(jws, policy: policy), code: .jwsVerificationFailed, step: .validity,
                                      reasonContains: "leaf certificate expired")
                continue
            }
            let signedDate = try XCTUnwrap(vector.signedDate, vector.file)
            let expectedDate = Date(appleMilliseconds: signedDate)
            switch vector.kind {
            case "transaction":
                let result = try verifier.verifyTransaction(jws, policy: policy)
                XCTAssertEqual(result.transaction.bundleId, vector.bundleId, vector.file)
                XCTAssertEqual(result.transaction.environment, environment, vector.file)
                XCTAssertEqual(result.transaction.signedDate, expectedDate, vector.file)
                XCTAssertEqual(result.details.effectiveDate, expectedDate, vector.file)
                XCTAssertEqual(result.details.effectiveDateSource, .signedDate)
                XCTAssertFalse(result.transaction.transactionId.isEmpty)
                XCTAssertFalse(result.transaction.productId.isEmpty)
            case "renewalInfo":
                let result = try verifier.verifyRenewalInfo(jws, policy: policy)
                XCTAssertEqual(result.renewalInfo.environment, environment, vector.file)
                XCTAssertEqual(result.renewalInfo.signedDate, expectedDate, vector.file)
                XCTAssertNotNil(result.renewalInfo.originalTransactionId, vector.file)
            case "notification":
                let result = try verifier.verifyNotification(jws, policy: policy)
                XCTAssertEqual(result.notification.notificationType.rawValue, vector.notificationType, vector.file)
                XCTAssertEqual(result.notification.subtype?.rawValue, vector.subtype, vector.file)
                XCTAssertEqual(result.notification.data?.bundleId, vector.bundleId, vector.file)
                XCTAssertEqual(result.notification.data?.environment, environment, vector.file)
                XCTAssertEqual(result.notification.data?.appAppleId, vector.appAppleId, vector.file)
                XCTAssertEqual(result.notification.signedDate, expectedDate, vector.file)
                XCTAssertEqual(result.notification.version, "2.0", vector.file)
                // Nested JWS are verified too and decode as transactions and renewal infos.
                XCTAssertEqual(result.transaction?.transaction.bundleId, vector.bundleId, vector.file)
                XCTAssertEqual(result.renewalInfo?.renewalInfo.environment, result.notification.data?.signedRenewalInfo == nil ? nil : environment, vector.file)
                XCTAssertNotNil(result.transaction, vector.file)
            default:
                XCTFail("unknown kind \(vector.kind)")
            }
            verifiedCount += 1
        }
        XCTAssertEqual(verifiedCount, 18)
    }

    func testNestedFilesMatchWhatTheNotificationCarries() throws {
        let verifier = SignedDataVerifier(roots: .apple)
        let policy = VerificationPolicy(bundleId: "com.loki-project.loki-messenger", environments: [.sandbox])
        let result = try verifier.verifyNotification(try Fixture.vector("sandbox-2025-notification-REFUND.jws"), policy: policy)
        let nested = try verifier.verifyTransaction(try Fixture.vector("sandbox-2025-REFUND-nested-transaction.jws"), policy: policy)
        XCTAssertEqual(result.transaction?.transaction, nested.transaction)
        XCTAssertEqual(result.transaction?.payloadJSON, nested.payloadJSON)
        XCTAssertEqual(result.notification.notificationType, .refund)
        XCTAssertNotNil(nested.transaction.revocationDate)
        XCTAssertEqual(nested.transaction.revocationReason.map { [RevocationReason.other, .appIssue].contains($0) }, true)
        // One chain for all three JWS: after the outer verification the nested ones are cache hits.
        XCTAssertEqual(result.details.chainCacheHit, false)
        XCTAssertEqual(result.transaction?.details.chainCacheHit, true)
        XCTAssertEqual(result.renewalInfo?.details.chainCacheHit, true)
        XCTAssertEqual(verifier.cachedChainCount, 1)
    }

    func testProductionNotificationChecksAppAppleId() throws {
        let jws = try Fixture.vector("production-2023-notification-CONSUMPTION_REQUEST.jws")
        let verifier = SignedDataVerifier(roots: .apple)
        let good = VerificationPolicy(bundleId: "com.jrjj.keysns", environments: [.production], appAppleId: 1_601_830_814)
        let result = try verifier.verifyNotification(jws, policy: good)
        XCTAssertEqual(result.notification.notificationType, .consumptionRequest)
        XCTAssertEqual(result.details.environment, .production)
        var wrong = good
        wrong.appAppleId = 1_601_830_815
        XCTAssertVerification(try verifier.verifyNotification(jws, policy: wrong), code: .appAppleIdMismatch, step: .claims)
        var sandboxOnly = good
        sandboxOnly.environments = [.sandbox]
        XCTAssertVerification(try verifier.verifyNotification(jws, policy: sandboxOnly), code: .environmentNotAllowed, step: .claims)
    }

    func testSandboxVectorsAgainstProductionPolicyAndWrongBundle() throws {
        let verifier = SignedDataVerifier(roots: .apple)
        let jws = try Fixture.vector("sandbox-2025-notification-DID_RENEW.jws")
        XCTAssertVerification(try verifier.verifyNotification(jws, policy: VerificationPolicy(bundleId: "com.loki-project.loki-messenger", environments: [.production])),
                              code: .environmentNotAllowed, step: .claims)
        XCTAssertVerification(try verifier.verifyNotification(jws, policy: VerificationPolicy(bundleId: "com.other.app", environments: [.sandbox])),
                              code: .bundleIdMismatch, step: .claims)
        let transaction = try Fixture.vector("sandbox-2022-transaction.jws")
        XCTAssertVerification(try verifier.verifyTransaction(transaction, policy: VerificationPolicy(bundleId: "com.voicerecording.telephone", environments: [.sandbox])),
                              code: .bundleIdMismatch, step: .claims)   // case-sensitive: the payload says "Com.VoiceRecording.Telephone"
        let renewal = try Fixture.vector("sandbox-2023-renewalinfo.jws")
        XCTAssertVerification(try verifier.verifyRenewalInfo(renewal, policy: VerificationPolicy(bundleId: "x", environments: [.production])),
                              code: .environmentNotAllowed, step: .claims)
    }

    func testOldLeafFailsAtNowButPassesAtSignedDate() throws {
        let verifier = SignedDataVerifier(roots: .apple)
        let jws = try Fixture.vector("sandbox-2022-transaction.jws")
        let policy = VerificationPolicy(bundleId: "Com.VoiceRecording.Telephone", environments: [.sandbox])
        XCTAssertNoThrow(try verifier.verifyTransaction(jws, policy: policy))
        XCTAssertVerification(try verifier.verifyTransaction(jws, policy: policy, at: Self.now), code: .jwsVerificationFailed, step: .validity,
                              reasonContains: "leaf certificate expired at the effective date")
        // The cached entry from the first call must not extend the leaf's validity.
        XCTAssertEqual(verifier.cachedChainCount, 1)
        // Absurd caller dates are clamped, not trapped on.
        for seconds in [1e19, -1e19, Double.infinity] {
            XCTAssertVerification(try verifier.verifyTransaction(jws, policy: policy, at: Date(timeIntervalSince1970: seconds)), code: .jwsVerificationFailed, step: .validity)
        }
    }

    func testRealChainIsRejectedByAnotherRoot() throws {
        let verifier = SignedDataVerifier(roots: try Fixture.testRoots())
        let policy = VerificationPolicy(bundleId: "com.loki-project.loki-messenger", environments: [.sandbox])
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.vector("sandbox-2025-DID_RENEW-nested-transaction.jws"), policy: policy),
                              code: .jwsVerificationFailed, step: .chain, reasonContains: "trusted root")
    }

    func testEmbeddedRootsAreByteIdenticalToApplesFiles() throws {
        let g3 = try Data(contentsOf: Fixture.shared.appendingPathComponent("apple-certs/AppleRootCA-G3.cer"))
        let g2 = try Data(contentsOf: Fixture.shared.appendingPathComponent("apple-certs/AppleRootCA-G2.cer"))
        XCTAssertEqual(AppleRootCertificates.g3, [UInt8](g3))
        XCTAssertEqual(AppleRootCertificates.g2, [UInt8](g2))
        XCTAssertEqual(TrustedRoots.apple.fingerprints.count, 2)
        XCTAssertEqual(TrustedRoots.apple.fingerprints[0].prefix(4), [0x63, 0x34, 0x3A, 0xBF])
    }
}
