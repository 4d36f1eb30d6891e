import Domain
import Foundation
import HTTPCore
import JSON
import XCTest

/// `POST /v1/receipts` with `receipt_data`, at a fixed instant: the 201 body (most recent purchase, the receipt's
/// entitlements, every record), what is recorded, and the receipt failures' error shape.
final class AppReceiptsTests: XCTestCase {
    static let created = Date(timeIntervalSince1970: 1_780_000_000)   // before Harness.now (2026-06-01)

    /// A record as the verifier turns it into facts (`ReceiptRules`).
    func record(_ id: String, original: String, product: String, purchased: Date, expires: Date?,
                cancelled: Date? = nil) -> TransactionFacts {
        TransactionFacts(
            transactionId: id, originalTransactionId: original, productId: product,
            type: ReceiptRules.productType(expiresDate: expires), environment: .sandbox, purchaseDate: purchased,
            expiresDate: expires, revocationDate: cancelled, signedDate: Self.created, bundleId: "com.example.app",
            payloadJSON: #"{"source":"receipt"}"#)
    }

    func post(_ h: Harness, _ receipt: String, user: String? = nil) -> Response {
        var body = #"{"receipt_data":"# + JSONValue.string(receipt).serializedString()
        if let user { body += #","user_id":"# + JSONValue.string(user).serializedString() }
        return h.postJSON("/v1/receipts/" + Harness.publicKey, body + "}")
    }

    func testAReceiptGrantsWhatItsActivePurchasesGrantNow() {
        let h = Harness()
        let day: TimeInterval = 86_400
        let expiredMonth = Harness.now.addingTimeInterval(-60 * day)
        let records = [
            record("11", original: "11", product: "com.myapp.pro.yearly", purchased: expiredMonth,
                   expires: expiredMonth.addingTimeInterval(30 * day)),
            record("12", original: "11", product: "com.myapp.pro.yearly", purchased: Harness.now.addingTimeInterval(-10 * day),
                   expires: Harness.now.addingTimeInterval(20 * day)),
            record("20", original: "20", product: "com.myapp.lifetime", purchased: expiredMonth, expires: nil),
            record("30", original: "30", product: "com.myapp.refunded", purchased: expiredMonth, expires: nil,
                   cancelled: expiredMonth.addingTimeInterval(day)),
        ]
        h.verifier.receipts.withLock {
            $0["MIIreceipt"] = ReceiptFacts(bundleId: "com.example.app", environment: .sandbox, creationDate: Self.created,
                                            transactions: records)
        }
        let r = post(h, "MIIreceipt", user: "user-1")
        XCTAssertEqual(r.status, 201, r.text)
        XCTAssertEqual(r.text, #"{"valid":true,"transaction_id":"12","original_transaction_id":"11","#
            + #""product_id":"com.myapp.pro.yearly","entitlements":["extras","pro"],"#
            + #""expires_date":"2026-06-21T00:00:00.000Z","status":"active","environment":"Sandbox","transactions":["#
            + #"{"transaction_id":"11","original_transaction_id":"11","product_id":"com.myapp.pro.yearly","#
            + #""purchase_date":"2026-04-02T00:00:00.000Z","expires_date":"2026-05-02T00:00:00.000Z","status":"expired"},"#
            + #"{"transaction_id":"12","original_transaction_id":"11","product_id":"com.myapp.pro.yearly","#
            + #""purchase_date":"2026-05-22T00:00:00.000Z","expires_date":"2026-06-21T00:00:00.000Z","status":"active"},"#
            + #"{"transaction_id":"20","original_transaction_id":"20","product_id":"com.myapp.lifetime","#
            + #""purchase_date":"2026-04-02T00:00:00.000Z","expires_date":null,"status":"active"},"#
            + #"{"transaction_id":"30","original_transaction_id":"30","product_id":"com.myapp.refunded","#
            + #""purchase_date":"2026-04-02T00:00:00.000Z","expires_date":null,"status":"revoked"}]}"#)
        XCTAssertEqual(h.purchases.transactionCount, 4)
        // The user holds the purchases like after posting each JWS.
        let user = h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/user-1")
        XCTAssertEqual(user.json?["entitlements"], ["extras", "pro"])
    }

    func testAReceiptWithoutPurchasesAnswersNone() {
        let h = Harness()
        h.verifier.receipts.withLock {
            $0["MIIempty"] = ReceiptFacts(bundleId: "com.example.app", environment: .production, creationDate: Self.created,
                                          transactions: [])
        }
        let r = post(h, "MIIempty")
        XCTAssertEqual(r.status, 201, r.text)
        XCTAssertEqual(r.text, #"{"valid":true,"transaction_id":null,"original_transaction_id":null,"product_id":null,"#
            + #""entitlements":[],"expires_date":null,"status":"none","environment":"Production","transactions":[]}"#)
        XCTAssertEqual(h.purchases.transactionCount, 0)
    }

    func testReceiptFailuresNameReceiptData() {
        let h = Harness()
        let r = post(h, "MIIforged")
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.json?["code"], "RECEIPT_VERIFICATION_FAILED")
        XCTAssertEqual(r.json?["error"], "Receipt verification failed: the receipt's signature does not verify")
        XCTAssertEqual(r.json?["suggestion"]?.stringValue?.hasPrefix("The receipt's signature or certificate chain"), true)
        XCTAssertEqual(r.json?["details"], [["path": ["receipt_data"], "message": "the receipt's signature does not verify",
                                              "step": "signature"]])
        XCTAssertEqual(h.purchases.transactionCount, 0)

        let three = h.postJSON("/v1/receipts/" + Harness.publicKey,
                               #"{"receipt_data":"x","transaction_id":"1","signed_transaction_info":"a.b.c"}"#)
        XCTAssertEqual(three.status, 400)
        XCTAssertEqual(three.json?["details"]?.arrayValue?.compactMap { $0["path"]?[0]?.stringValue },
                       ["signed_transaction_info", "transaction_id", "receipt_data"])
        let notString = h.postJSON("/v1/receipts/" + Harness.publicKey, #"{"receipt_data":42}"#)
        XCTAssertEqual(notString.status, 400)
        XCTAssertEqual(notString.json?["code"], "VALIDATION_ERROR")
        XCTAssertEqual(notString.json?["details"]?[0]?["path"], ["receipt_data"])
    }

    func testMostRecentIsTheLatestPurchaseDateThenTheGreaterId() {
        let t = Date(timeIntervalSince1970: 1_000)
        let a = record("9", original: "9", product: "p", purchased: t, expires: nil)
        let b = record("10", original: "10", product: "p", purchased: t, expires: nil)
        let c = record("1", original: "1", product: "p", purchased: t.addingTimeInterval(-1), expires: nil)
        XCTAssertEqual(ReceiptRules.mostRecent([a, b, c]), 0)   // "9" > "10" in byte order
        XCTAssertEqual(ReceiptRules.mostRecent([c, b]), 1)
        XCTAssertNil(ReceiptRules.mostRecent([]))
        XCTAssertEqual(ReceiptRules.productType(expiresDate: t), .autoRenewable)
        XCTAssertEqual(ReceiptRules.productType(expiresDate: nil), .nonConsumable)
    }
}
