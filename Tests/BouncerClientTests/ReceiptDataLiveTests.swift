@testable import BouncerClient
import Foundation
import TestSupport
import XCTest

/// `postReceipt(receiptData:)` with a real StoreKit 1 sandbox receipt (`Tests/Fixtures/apple/test-vectors`) against a server
/// trusting the bundled Apple roots. `receipt_data` on `POST /v1/receipts` comes with the `receiptapi` branch: the test
/// is skipped only while the server refuses the field as unknown (400 VALIDATION_ERROR asking for
/// signed_transaction_info).
final class ReceiptDataLiveTests: XCTestCase {
    func testARealReceiptIsVerifiedAndEveryRecordListed() async throws {
        let receipt = try String(contentsOf: TestPaths.vectors.appendingPathComponent("legacy-receipt-sandbox-2025-sha256-g5.b64"),
                                 encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let live = try LiveBouncer(label: "receiptdata", overrides: ["BOUNCER_ROOT_CERTIFICATES": nil])
        defer { live.stop() }
        let product = "dev.bonzer.weeka.app.subscription.pro.annual"
        let project = try live.project(bundleId: "dev.bonzer.weeka.app", extra: [("environments", ["Sandbox"])],
                                       product: product)
        let result: ReceiptResult
        do {
            result = try await live.client(project).postReceipt(receiptData: receipt, userId: "sk1-user")
        } catch {
            if error.code == "VALIDATION_ERROR", error.details.map(\.path) == [["signed_transaction_info"]] {
                throw XCTSkip("this server does not take receipt_data yet: \(error.details)")
            }
            throw error
        }
        let iso = BouncerClient.makeDecoder()
        func at(_ text: String) throws -> Date {
            try iso.decode([Date].self, from: Data(#"["\#(text)"]"#.utf8))[0]
        }
        XCTAssertEqual(result, ReceiptResult(
            valid: true, transactionId: "2000001092148094", originalTransactionId: "2000001092134138", productId: product,
            entitlements: [], expiresDate: try at("2025-12-26T18:55:07.000Z"), status: .expired, environment: .sandbox,
            transactions: [
                ReceiptTransaction(transactionId: "2000001092134138", originalTransactionId: "2000001092134138",
                                   productId: product, purchaseDate: try at("2025-12-26T17:43:07.000Z"),
                                   expiresDate: try at("2025-12-26T18:19:07.000Z"), status: .expired),
                ReceiptTransaction(transactionId: "2000001092148094", originalTransactionId: "2000001092134138",
                                   productId: product, purchaseDate: try at("2025-12-26T18:19:07.000Z"),
                                   expiresDate: try at("2025-12-26T18:55:07.000Z"), status: .expired),
            ]))
        XCTAssertEqual(try live.transactionRows(project), [
            "2000001092134138 \(product) Sandbox sk1-user", "2000001092148094 \(product) Sandbox sk1-user",
        ])

        // A receipt that is not one: the verifier's 400 with the field and step.
        let garbage = await bouncerError { try await live.client(project).postReceipt(receiptData: "bm90IGEgcmVjZWlwdA==") }
        XCTAssertEqual(garbage?.kind, .server)
        XCTAssertEqual(garbage?.status, 400)
        XCTAssertEqual(garbage?.details.first?.path, ["receipt_data"])
    }
}
