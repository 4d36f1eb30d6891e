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
}
