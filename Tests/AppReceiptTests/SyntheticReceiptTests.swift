import AppStoreJWS
import Foundation
import TestSupport
import XCTest
@testable import AppReceipt

/// `TestReceipt` (the synthetic receipts of the end-to-end tests) against the real verifier: what the builder writes
/// is exactly what the decoder reads, field for field, so an E2E failure is never the builder's.
final class SyntheticReceiptTests: XCTestCase {
    static func verifier() throws -> ReceiptVerifier {
        let root = try [UInt8](Data(contentsOf: TestPaths.pki.appendingPathComponent("root.der")))
        return try XCTUnwrap(ReceiptVerifier(rootDERs: [root]))
    }

    func testBuiltReceiptVerifiesAndDecodesFieldForField() throws {
        let created = try XCTUnwrap(ReceiptDate("2026-03-04T05:06:07Z"))
        let purchased = try XCTUnwrap(ReceiptDate("2026-03-01T00:00:00Z"))
        let expires = try XCTUnwrap(ReceiptDate("2026-04-01T00:00:00Z"))
        let cancelled = try XCTUnwrap(ReceiptDate("2026-03-02T12:00:00Z"))
        var subscription = TestReceipt.InApp(productId: "pro.monthly", transactionId: "1002", originalTransactionId: "1001",
                                             purchaseDate: purchased.date, expiresDate: expires.date)
        subscription.quantity = 1
        subscription.webOrderLineItemId = 3_000_000_000   // above Int32: an 8-byte INTEGER
        subscription.isTrialPeriod = false
        subscription.isInIntroOfferPeriod = true
        let refunded = TestReceipt.InApp(productId: "gems", transactionId: "1003", purchaseDate: purchased.date,
                                         cancellationDate: cancelled.date)
        let receipt = TestReceipt(bundleId: "com.example.synthetic", creationDate: created.date,
                                  inApp: [subscription, refunded])

        let verified = try Self.verifier().verify(der: try receipt.signedDER(), policy: VerificationPolicy(
            bundleId: "com.example.synthetic", environments: [.sandbox], allowXcode: false))
        XCTAssertEqual(verified.environment, .sandbox)
        XCTAssertEqual(verified.digestAlgorithm, "SHA256")
        XCTAssertEqual(verified.effectiveDate, created.date, "the chain is judged at the creation date")
        XCTAssertEqual(verified.chainSubjects.count, 3)

        let p = verified.payload
        XCTAssertEqual(p.receiptType, "ProductionSandbox")
        XCTAssertEqual(p.bundleId, "com.example.synthetic")
        XCTAssertEqual(p.applicationVersion, "42")
        XCTAssertEqual(p.originalApplicationVersion, "1.0")
        XCTAssertEqual(p.creationDate, created)
        XCTAssertEqual(p.opaqueValue, Array("opaque-value".utf8))
        XCTAssertEqual(p.sha1Hash, [UInt8](repeating: 0x5A, count: 20))
        XCTAssertEqual(p.otherAttributes, [])
        XCTAssertEqual(p.inAppPurchases, [
            InAppPurchaseRecord(
                quantity: 1, productId: "pro.monthly", transactionId: "1002", originalTransactionId: "1001",
                purchaseDate: purchased, originalPurchaseDate: purchased, expiresDate: expires,
                webOrderLineItemId: 3_000_000_000, cancellationDate: nil, cancellationReason: nil,
                isInIntroOfferPeriod: true, isTrialPeriod: false, promotionalOfferId: nil, otherAttributes: []),
            InAppPurchaseRecord(
                quantity: 1, productId: "gems", transactionId: "1003", originalTransactionId: "1003",
                purchaseDate: purchased, originalPurchaseDate: purchased, expiresDate: nil,
                webOrderLineItemId: nil, cancellationDate: cancelled, cancellationReason: nil,
                isInIntroOfferPeriod: nil, isTrialPeriod: nil, promotionalOfferId: nil, otherAttributes: []),
        ])
    }

    func testIntegersAreMinimalTwosComplement() {
        XCTAssertEqual(TestReceipt.DER.integer(0), [0x02, 0x01, 0x00])
        XCTAssertEqual(TestReceipt.DER.integer(127), [0x02, 0x01, 0x7F])
        XCTAssertEqual(TestReceipt.DER.integer(128), [0x02, 0x02, 0x00, 0x80])
        XCTAssertEqual(TestReceipt.DER.integer(1701), [0x02, 0x02, 0x06, 0xA5])
        XCTAssertEqual(TestReceipt.DER.integer(-1), [0x02, 0x01, 0xFF])
        XCTAssertEqual(TestReceipt.DER.integer(-129), [0x02, 0x02, 0xFF, 0x7F])
        XCTAssertEqual(TestReceipt.DER.tlv(0x04, [UInt8](repeating: 0, count: 200)).prefix(3), [0x04, 0x81, 0xC8])
        XCTAssertEqual(TestReceipt.DER.tlv(0x04, [UInt8](repeating: 0, count: 300)).prefix(4), [0x04, 0x82, 0x01, 0x2C])
    }
}
