import AppStoreJWS
import Foundation
import TestSupport
import XCTest
@testable import AppReceipt

/// The two real StoreKit 1 receipts of Tests/Fixtures/apple/test-vectors, verified with the embedded Apple Inc. Root at
/// their creation dates, every documented field compared with values read independently (openssl cms + a
/// Python DER walk), and the tampered variants refused with the right code and step.
final class RealReceiptTests: XCTestCase {
    static let receipt2025 = "legacy-receipt-sandbox-2025-sha256-g5.b64"
    static let receipt2020 = "legacy-receipt-sandbox-2020-sha1.b64"
    /// A fixed "now" after both signing certificates expired (the vectors README's 2026-11-21).
    static let now = Date(timeIntervalSince1970: 1_795_000_000)

    static func base64(_ name: String) throws -> String {
        try String(contentsOf: TestPaths.vectors.appendingPathComponent(name), encoding: .utf8)
    }
    static func der(_ name: String) throws -> [UInt8] {
        try XCTUnwrap(Data(base64Encoded: base64(name), options: .ignoreUnknownCharacters)).map { $0 }
    }
    static func fixture(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
        return [UInt8](try Data(contentsOf: url))
    }
    static func policy(_ bundleId: String, _ environments: Set<AppStoreEnvironment> = [.production, .sandbox], allowXcode: Bool = false) -> VerificationPolicy {
        VerificationPolicy(bundleId: bundleId, environments: environments, allowXcode: allowXcode)
    }
    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }

    /// Expects `body` to throw `code` at `step`.
    func assertRejected(_ code: VerificationError.Code, _ step: VerificationError.Step,
                        file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> VerifiedReceipt) {
        do {
            let verified = try body()
            XCTFail("accepted: \(verified.payload.bundleId)", file: file, line: line)
        } catch let error as VerificationError {
            XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
            XCTAssertEqual(error.step, step, "\(error)", file: file, line: line)
            XCTAssertFalse(error.reason.isEmpty, file: file, line: line)
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
        }
    }

    func testEmbeddedAppleIncRootIsTheSharedFile() throws {
        let shared = try Data(contentsOf: TestPaths.vectors.deletingLastPathComponent().appendingPathComponent("apple-certs/AppleIncRootCertificate.cer"))
        XCTAssertEqual(AppleRootCertificates.appleIncRoot, [UInt8](shared))
        XCTAssertEqual(ReceiptVerifier.apple.rootFingerprints, [Self.hex("b0b1730ecbc7ff4505142c49f1295e6eda6bcaed7e2c68c5be91b5a11001f024")])
    }

    func test2025SHA256ReceiptVerifiesAtItsCreationDateWithEveryField() throws {
        let verified = try ReceiptVerifier.apple.verify(base64: Self.base64(Self.receipt2025), policy: Self.policy("dev.bonzer.weeka.app"))
        XCTAssertEqual(verified.environment, .sandbox)
        XCTAssertEqual(verified.digestAlgorithm, "SHA256")
        XCTAssertEqual(verified.effectiveDateSource, .receiptCreationDate)
        XCTAssertEqual(verified.effectiveDate, Date(timeIntervalSince1970: 1_766_774_387))
        XCTAssertFalse(verified.isXcodeSigned)
        XCTAssertEqual(verified.chainSubjects.count, 3)
        XCTAssertTrue(verified.chainSubjects[1].contains("OU=G5"), verified.chainSubjects[1])
        XCTAssertTrue(verified.signerSubject.contains("CN=Mac App Store and iTunes Store Receipt Signing"))

        let p = verified.payload
        XCTAssertEqual(p.receiptType, "ProductionSandbox")
        XCTAssertEqual(p.bundleId, "dev.bonzer.weeka.app")
        XCTAssertEqual(p.applicationVersion, "2")
        XCTAssertEqual(p.originalApplicationVersion, "1.0")
        XCTAssertEqual(p.creationDate.text, "2025-12-26T18:39:47Z")
        XCTAssertEqual(p.creationDate.milliseconds, 1_766_774_387_000)
        XCTAssertNil(p.expirationDate)
        XCTAssertEqual(p.opaqueValue, Self.hex("be1dd3ea9bcf4d08652eb539b9e05694"))
        XCTAssertEqual(p.sha1Hash, Self.hex("2158847543683847e9382a0fc51853cb17abcd6d"))
        XCTAssertEqual(p.bundleIdDER, [0x0C, 0x14] + Array("dev.bonzer.weeka.app".utf8))
        XCTAssertEqual(p.otherAttributes.map(\.type).sorted(), [1, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 18, 20, 25])

        XCTAssertEqual(p.inAppPurchases.count, 2)
        let first = p.inAppPurchases[0], second = p.inAppPurchases[1]
        XCTAssertEqual(first.quantity, 1)
        XCTAssertEqual(first.productId, "dev.bonzer.weeka.app.subscription.pro.annual")
        XCTAssertEqual(first.transactionId, "2000001092134138")
        XCTAssertEqual(first.originalTransactionId, "2000001092134138")
        XCTAssertEqual(first.purchaseDate?.text, "2025-12-26T17:43:07Z")
        XCTAssertEqual(first.originalPurchaseDate?.text, "2025-12-26T17:43:07Z")
        XCTAssertEqual(first.expiresDate?.text, "2025-12-26T18:19:07Z")
        XCTAssertEqual(first.expiresDate?.milliseconds, 1_766_773_147_000)
        XCTAssertEqual(first.webOrderLineItemId, 2_000_000_123_357_229)
        XCTAssertNil(first.cancellationDate)          // Apple writes "" for "not cancelled"
        XCTAssertNil(first.cancellationReason)
        XCTAssertEqual(first.isTrialPeriod, false)
        XCTAssertEqual(first.isInIntroOfferPeriod, false)
        XCTAssertNil(first.promotionalOfferId)
        XCTAssertEqual(first.otherAttributes.map(\.type).sorted(), [1707, 1709, 1710, 1714, 1715, 1716, 1717, 1718, 1722])
        XCTAssertEqual(second.transactionId, "2000001092148094")
        XCTAssertEqual(second.originalTransactionId, "2000001092134138")
        XCTAssertEqual(second.purchaseDate?.text, "2025-12-26T18:19:07Z")
        XCTAssertEqual(second.expiresDate?.text, "2025-12-26T18:55:07Z")
        XCTAssertEqual(second.webOrderLineItemId, 2_000_000_123_357_230)
    }

    func test2020SHA1ReceiptVerifiesAtItsCreationDateWithAll187Records() throws {
        let verified = try ReceiptVerifier.apple.verify(der: Self.der(Self.receipt2020), policy: Self.policy("com.nutcall.alert"))
        XCTAssertEqual(verified.environment, .sandbox)
        XCTAssertEqual(verified.digestAlgorithm, "SHA1")
        XCTAssertEqual(verified.effectiveDate, Date(timeIntervalSince1970: 1_588_789_729))
        let p = verified.payload
        XCTAssertEqual(p.receiptType, "ProductionSandbox")
        XCTAssertEqual(p.bundleId, "com.nutcall.alert")
        XCTAssertEqual(p.applicationVersion, "32")
        XCTAssertEqual(p.originalApplicationVersion, "1.0")
        XCTAssertEqual(p.creationDate.text, "2020-05-06T18:28:49Z")
        XCTAssertEqual(p.opaqueValue, Self.hex("26caf91cf7e98e6232a40b1764f4f166"))
        XCTAssertEqual(p.sha1Hash, Self.hex("e3afc764d183e3d333cd7b99266c721321522e63"))

        let records = p.inAppPurchases
        XCTAssertEqual(records.count, 187)
        XCTAssertEqual(Set(records.map(\.transactionId)).count, 187)
        XCTAssertEqual(Dictionary(grouping: records, by: \.productId).mapValues(\.count),
                       ["com.nutcallalert.inapp.optimum": 116, "com.nutcallalert.inapp.pro": 39, "com.nutcallalert.inapp.lite": 32])
        XCTAssertTrue(records.allSatisfy { $0.quantity == 1 && $0.originalTransactionId == "1000000603177571" && $0.cancellationDate == nil })
        XCTAssertEqual(records.filter { $0.isTrialPeriod == true }.count, 1)
        XCTAssertEqual(records.filter { $0.isInIntroOfferPeriod == true }.count, 0)
        XCTAssertEqual(records.compactMap(\.expiresDate).count, 187)
        XCTAssertEqual(records.compactMap(\.expiresDate).max()?.text, "2020-05-06T18:31:31Z")

        let first = records[0]
        XCTAssertEqual(first.productId, "com.nutcallalert.inapp.pro")
        XCTAssertEqual(first.transactionId, "1000000637840752")
        XCTAssertEqual(first.purchaseDate?.text, "2019-12-10T12:54:58Z")
        XCTAssertEqual(first.originalPurchaseDate?.text, "2020-03-11T14:25:26Z")
        XCTAssertEqual(first.expiresDate?.text, "2019-12-10T12:59:58Z")
        XCTAssertEqual(first.webOrderLineItemId, 1_000_000_048_877_195)
        XCTAssertEqual(first.isTrialPeriod, false)

        let last = records[186]   // the one trial-period record
        XCTAssertEqual(last.productId, "com.nutcallalert.inapp.optimum")
        XCTAssertEqual(last.transactionId, "1000000637840616")
        XCTAssertEqual(last.purchaseDate?.text, "2020-03-10T17:02:47Z")
        XCTAssertEqual(last.expiresDate?.text, "2020-03-10T17:06:47Z")
        XCTAssertEqual(last.webOrderLineItemId, 1_000_000_049_892_290)
        XCTAssertEqual(last.isTrialPeriod, true)
    }

    func testBothReceiptsFailAtNowWithTheExpiredChain() throws {
        assertRejected(.receiptVerificationFailed, .validity) {
            try ReceiptVerifier.apple.verify(base64: Self.base64(Self.receipt2025), policy: Self.policy("dev.bonzer.weeka.app"), at: Self.now)
        }
        assertRejected(.receiptVerificationFailed, .validity) {
            try ReceiptVerifier.apple.verify(base64: Self.base64(Self.receipt2020), policy: Self.policy("com.nutcall.alert"), at: Self.now)
        }
        // An explicit date inside the validity window is reported as an override.
        let verified = try ReceiptVerifier.apple.verify(base64: Self.base64(Self.receipt2020), policy: Self.policy("com.nutcall.alert"),
                                                        at: Date(timeIntervalSince1970: 1_600_000_000))
        XCTAssertEqual(verified.effectiveDateSource, .override)
    }

    func testOneByteFlippedInsideTheSignedContentFailsTheSignature() throws {
        var der = try Self.der(Self.receipt2025)
        let needle = Array("dev.bonzer.weeka.app".utf8)
        let offset = try XCTUnwrap((0...(der.count - needle.count)).first { Array(der[$0..<($0 + needle.count)]) == needle })
        der[offset + 4] ^= 0x01   // "dev.bonzer" → "dev/bonzer": still well-formed DER, no longer what Apple signed
        assertRejected(.receiptVerificationFailed, .signature) {
            try ReceiptVerifier.apple.verify(der: der, policy: Self.policy("dev.bonzer.weeka.app"))
        }
    }

    func testSwappedSignerCertificateIsRefused() throws {
        assertRejected(.receiptVerificationFailed, .signature) {
            try ReceiptVerifier.apple.verify(der: Self.fixture("receipt-2025-signer-cert-swapped.der"), policy: Self.policy("dev.bonzer.weeka.app"))
        }
        assertRejected(.receiptVerificationFailed, .signature) {
            try ReceiptVerifier.apple.verify(der: Self.fixture("receipt-2025-signer-cert-swapped-and-named.der"), policy: Self.policy("dev.bonzer.weeka.app"))
        }
    }

    func testReceiptResignedByAnotherPKIIsUntrustedUnlessItsRootIsConfigured() throws {
        let resigned = try Self.fixture("receipt-2025-resigned-test-pki.der")
        assertRejected(.receiptVerificationFailed, .chain) {
            try ReceiptVerifier.apple.verify(der: resigned, policy: Self.policy("dev.bonzer.weeka.app"))
        }
        // Its claims are not believed before the chain: a Production-only project still hears "verification failed".
        assertRejected(.receiptVerificationFailed, .chain) {
            try ReceiptVerifier.apple.verify(der: resigned, policy: Self.policy("com.example.other", [.production]))
        }
        let testRoot = try [UInt8](Data(contentsOf: TestPaths.pki.appendingPathComponent("root.der")))
        let verifier = try XCTUnwrap(ReceiptVerifier(rootDERs: [testRoot]))
        let verified = try verifier.verify(der: resigned, policy: Self.policy("dev.bonzer.weeka.app"))
        XCTAssertEqual(verified.digestAlgorithm, "SHA256")
        XCTAssertEqual(verified.payload.inAppPurchases.count, 2)
        // Same PKI, a digest receipts never use.
        assertRejected(.receiptVerificationFailed, .signature) {
            try verifier.verify(der: Self.fixture("receipt-2025-resigned-test-pki-sha384.der"), policy: Self.policy("dev.bonzer.weeka.app"))
        }
    }

    func testTruncatedAndNonReceiptInputsAreFormatErrors() throws {
        let der = try Self.der(Self.receipt2025)
        for length in [0, 1, 2, 19, der.count / 2, der.count - 1] {
            assertRejected(.invalidReceiptFormat, length == 0 ? .encoding : .pkcs7) {
                try ReceiptVerifier.apple.verify(der: Array(der.prefix(length)), policy: Self.policy("dev.bonzer.weeka.app"))
            }
        }
        assertRejected(.invalidReceiptFormat, .pkcs7) {
            try ReceiptVerifier.apple.verify(der: der + [0x00], policy: Self.policy("dev.bonzer.weeka.app"))
        }
        assertRejected(.invalidReceiptFormat, .encoding) {
            try ReceiptVerifier.apple.verify(base64: "not base64!", policy: Self.policy("dev.bonzer.weeka.app"))
        }
        assertRejected(.invalidReceiptFormat, .pkcs7) {
            try ReceiptVerifier.apple.verify(base64: "aGVsbG8gd29ybGQ=", policy: Self.policy("dev.bonzer.weeka.app"))
        }
        // Base64 with line breaks (as files and old SDKs wrap it) is the same receipt.
        let wrapped = try Self.base64(Self.receipt2025).enumerated().map { $0.offset % 64 == 63 ? "\($0.element)\r\n" : "\($0.element)" }.joined()
        XCTAssertEqual(try ReceiptVerifier.apple.verify(base64: wrapped, policy: Self.policy("dev.bonzer.weeka.app")).payload.inAppPurchases.count, 2)
    }

    func testClaimsBundleIdAndEnvironment() throws {
        let text = try Self.base64(Self.receipt2025)
        assertRejected(.bundleIdMismatch, .claims) {
            try ReceiptVerifier.apple.verify(base64: text, policy: Self.policy("com.example.other"))
        }
        assertRejected(.bundleIdMismatch, .claims) {   // exact, case-sensitive
            try ReceiptVerifier.apple.verify(base64: text, policy: Self.policy("dev.bonzer.weeka.APP"))
        }
        assertRejected(.environmentNotAllowed, .claims) {   // ProductionSandbox is Sandbox
            try ReceiptVerifier.apple.verify(base64: text, policy: Self.policy("dev.bonzer.weeka.app", [.production]))
        }
        XCTAssertEqual(try ReceiptVerifier.apple.verify(base64: text, policy: Self.policy("dev.bonzer.weeka.app", [.sandbox])).environment, .sandbox)
        XCTAssertEqual(ReceiptVerifier.environment(ofReceiptType: "Production"), .production)
        XCTAssertEqual(ReceiptVerifier.environment(ofReceiptType: "ProductionSandbox"), .sandbox)
        XCTAssertEqual(ReceiptVerifier.environment(ofReceiptType: "Xcode"), .xcode)
        XCTAssertNil(ReceiptVerifier.environment(ofReceiptType: "production"))
    }

    func testXcodeReceiptsFollowTheXcodeRules() throws {
        let xcode = try String(contentsOf: TestPaths.vectors.appendingPathComponent("apple-library-mocks/xcode/xcode-app-receipt-with-transaction"), encoding: .utf8)
        let bundle = "com.example.naturelab.backyardbirds.example"
        assertRejected(.environmentNotAllowed, .claims) {
            try ReceiptVerifier.apple.verify(base64: xcode, policy: Self.policy(bundle))
        }
        assertRejected(.environmentNotAllowed, .claims) {   // the flag alone is not enough without Sandbox
            try ReceiptVerifier.apple.verify(base64: xcode, policy: Self.policy(bundle, [.production], allowXcode: true))
        }
        let verified = try ReceiptVerifier.apple.verify(base64: xcode, policy: Self.policy(bundle, [.sandbox], allowXcode: true))
        XCTAssertEqual(verified.environment, .xcode)
        XCTAssertTrue(verified.isXcodeSigned)
        XCTAssertEqual(verified.chainSubjects, [])
        XCTAssertEqual(verified.payload.receiptType, "Xcode")
        XCTAssertEqual(verified.payload.applicationVersion, "1")
        XCTAssertEqual(verified.payload.creationDate.text, "2023-10-19T01:45:40Z")
        XCTAssertEqual(verified.payload.expirationDate?.text, "4001-01-01T00:00:00Z")
        XCTAssertNil(verified.payload.originalApplicationVersion)
        XCTAssertEqual(verified.payload.inAppPurchases.count, 1)
        let record = try XCTUnwrap(verified.payload.inAppPurchases.first)
        XCTAssertEqual(record.productId, "pass.premium")
        XCTAssertEqual(record.transactionId, "0")
        XCTAssertNil(record.originalTransactionId)
        XCTAssertEqual(record.purchaseDate?.text, "2023-10-19T01:45:36Z")
        XCTAssertEqual(record.expiresDate?.text, "2023-11-19T01:45:36Z")
        XCTAssertEqual(record.isInIntroOfferPeriod, true)
        // Still checked: the bundle id.
        assertRejected(.bundleIdMismatch, .claims) {
            try ReceiptVerifier.apple.verify(base64: xcode, policy: Self.policy("com.example", [.sandbox], allowXcode: true))
        }
        let empty = try String(contentsOf: TestPaths.vectors.appendingPathComponent("apple-library-mocks/xcode/xcode-app-receipt-empty"), encoding: .utf8)
        XCTAssertEqual(try ReceiptVerifier.apple.verify(base64: empty, policy: Self.policy(bundle, [.sandbox], allowXcode: true)).payload.inAppPurchases.count, 0)
    }
}
