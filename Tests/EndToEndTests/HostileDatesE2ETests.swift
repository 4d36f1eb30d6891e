import Foundation
import JSON
import TestSupport
import XCTest

/// Issue 21, item 8: dates no App Store signs (±Int64.max milliseconds, before year 1, after 9999) in data anyone can
/// sign (Xcode JWS, Xcode receipts) answer 400 with the format code and the field in `details`, never a 500 from
/// PostgreSQL's timestamps, and write nothing.
final class HostileDatesE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "hostiledates" }

    /// Just outside the range on both sides, and the extremes of Int64.
    static let extremes: [Int64] = [Int64.max, Int64.min, -62_135_769_600_001, 253_402_300_800_000]

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

    /// Receipt date texts no App Store signs: before `Date.distantPast`'s day, a five-digit year, a signed year, Int64's
    /// extremes in seconds as a forger's formatter writes them, and an impossible day.
    static let hostileReceiptDates = [
        "0000-01-01T00:00:00Z", "0000-12-29T23:59:59Z", "10000-01-01T00:00:00Z", "+10000-01-01T00:00:00Z",
        "-0001-01-01T00:00:00Z", "292277026596-12-04T15:30:07Z", "-292277022657-01-27T08:29:52Z", "9999-12-32T00:00:00Z",
    ]
    /// The first and last instants of the range: a receipt may carry them.
    static let extremeButValidReceiptDates = ["0000-12-30T00:00:00Z", "9999-12-31T23:59:59.999Z"]
    /// Every date of a receipt, by attribute number, under verifyReceipt's JSON name (`details[].path`'s second part).
    static let receiptDateFields: [(field: Int64, name: String)] = [
        (12, "receipt_creation_date"), (21, "expiration_date"), (1704, "in_app[0].purchase_date"),
        (1706, "in_app[0].original_purchase_date"), (1708, "in_app[0].expires_date"),
        (1712, "in_app[0].cancellation_date"),
    ]

    /// An Xcode receipt of one subscription record whose `field` date is written as `text`.
    private func xcodeReceipt(_ tenant: Tenant, field: Int64, text: String) throws -> String {
        var record = TestReceipt.InApp(productId: "com.e2e.pro.monthly", transactionId: "hd\(E2E.uniqueId())",
                                       purchaseDate: Date(), expiresDate: Date().addingTimeInterval(3600))
        var receipt = TestReceipt(bundleId: tenant.bundleId)
        receipt.receiptType = "Xcode"
        if field >= 1700 { record.rawDates[field] = text } else { receipt.rawDates[field] = text }
        receipt.inApp = [record]
        return try receipt.base64()
    }

    private func postReceiptData(_ tenant: Tenant, _ receipt: String) throws -> HTTPResponse {
        try api.client.post("/v1/receipts/\(tenant.publicKey)",
                            json: ["receipt_data": .string(receipt), "user_id": "u"])
    }

    /// Item 8 for StoreKit 1: every receipt date through the extremes; outside the range a 400 naming the field and
    /// no row (a year-0000 or year-10000 date was a 500 INTERNAL_ERROR after rows were written), inside it a 201.
    func testEveryReceiptDateAtTheExtremesIs400NamingTheField() throws {
        let api = try api
        let tenant = try api.createProject(extra: [("allow_xcode", true)])
        try api.mapProduct(tenant)
        for (field, name) in Self.receiptDateFields {
            for text in Self.hostileReceiptDates {
                let r = try postReceiptData(tenant, try xcodeReceipt(tenant, field: field, text: text))
                assertError(r, 400, "INVALID_RECEIPT_FORMAT")
                XCTAssertEqual(try r.json()["details"]?[0]?["path"], ["receipt_data", .string(name)],
                               "\(name) = \(text): \(r.description)")
            }
        }
        XCTAssertEqual(try rowCount(tenant), 0)
        for (field, name) in Self.receiptDateFields {
            for text in Self.extremeButValidReceiptDates {
                let r = try postReceiptData(tenant, try xcodeReceipt(tenant, field: field, text: text))
                XCTAssertEqual(r.status, 201, "\(name) = \(text): \(r.description)")
            }
        }
    }
}
