import Foundation
import JSON
import TestSupport
import XCTest

/// Issue 21, item 8: dates no App Store signs (±Int64.max milliseconds, before 1970, after 9999) in data anyone can
/// sign (Xcode JWS, Xcode receipts) answer 400 with the format code and the field in `details`, never a 500 from
/// PostgreSQL's timestamps, and write nothing.
final class HostileDatesE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "hostiledates" }

    /// Just outside the range on both sides, and the extremes of Int64.
    static let extremes: [Int64] = [Int64.max, Int64.min, -1, 253_402_300_800_000]

    private func xcodeSigned(_ payload: TransactionPayload) throws -> String {
        var xcode = payload
        xcode.environment = "Xcode"
        return try E2E.mint(xcode.json, x5c: [E2EPaths.untrustedCerts.appendingPathComponent("untrusted-leaf.pem").path])
    }

    private func rowCount(_ tenant: Tenant) throws -> Int {
        try db.count("transactions", project: tenant.id) + db.count("purchases", project: tenant.id)
    }

    func testEveryTransactionDateAtTheExtremesIs400NamingTheField() throws {
        let api = try api
        let tenant = try api.createProject(extra: [("allow_xcode", true)])
        try api.mapProduct(tenant)
        let fields: [(String, WritableKeyPath<TransactionPayload, Int64?>)] = [
            ("originalPurchaseDate", \.originalPurchaseDate), ("expiresDate", \.expiresDate),
            ("revocationDate", \.revocationDate),
        ]
        for value in Self.extremes {
            var cases: [(String, TransactionPayload)] = []
            for (name, path) in fields {
                var p = TransactionPayload(bundleId: tenant.bundleId)
                p[keyPath: path] = value
                cases.append((name, p))
            }
            var purchase = TransactionPayload(bundleId: tenant.bundleId)
            purchase.purchaseDate = value
            cases.append(("purchaseDate", purchase))
            var signed = TransactionPayload(bundleId: tenant.bundleId)
            signed.signedDate = value
            cases.append(("signedDate", signed))
            for (name, payload) in cases {
                let r = try api.postReceipt(tenant.publicKey, try xcodeSigned(payload), user: "u")
                assertError(r, 400, "INVALID_JWS_FORMAT")
                XCTAssertEqual(try r.json()["details"]?[0]?["path"], ["signed_transaction_info", .string(name)],
                               "\(name) = \(value): \(r.description)")
            }
        }
        XCTAssertEqual(try rowCount(tenant), 0)
    }

    func testEveryReceiptDateOutsideTheRangeIs400NamingTheField() throws {
        let api = try api
        let tenant = try api.createProject(extra: [("allow_xcode", true)])
        try api.mapProduct(tenant)
        let year1 = Date(timeIntervalSince1970: -62_135_596_800)   // 0001-01-01T00:00:00Z
        let before1970 = Date(timeIntervalSince1970: -1)
        for date in [year1, before1970] {
            var cases: [(String, TestReceipt)] = []
            func receipt(_ change: (inout TestReceipt.InApp) -> Void) -> TestReceipt {
                var record = TestReceipt.InApp(productId: "com.e2e.pro.monthly", transactionId: E2E.uniqueId(),
                                               purchaseDate: Date(), expiresDate: Date().addingTimeInterval(86_400))
                change(&record)
                var r = TestReceipt(bundleId: tenant.bundleId, inApp: [record])
                r.receiptType = "Xcode"
                return r
            }
            cases.append(("in_app[0].purchase_date", receipt { $0.purchaseDate = date }))
            cases.append(("in_app[0].original_purchase_date", receipt { $0.originalPurchaseDate = date }))
            cases.append(("in_app[0].expires_date", receipt { $0.expiresDate = date }))
            cases.append(("in_app[0].cancellation_date", receipt { $0.cancellationDate = date }))
            var created = receipt { _ in }
            created.creationDate = date
            cases.append(("receipt_creation_date", created))
            for (name, receipt) in cases {
                let body: JSONValue = ["receipt_data": .string(try receipt.base64()), "user_id": "u"]
                let r = try api.client.post("/v1/receipts/\(tenant.publicKey)", json: body)
                assertError(r, 400, "INVALID_RECEIPT_FORMAT")
                XCTAssertEqual(try r.json()["details"]?[0]?["path"], ["receipt_data", .string(name)],
                               "\(name) = \(date): \(r.description)")
            }
        }
        XCTAssertEqual(try rowCount(tenant), 0)
    }
}
