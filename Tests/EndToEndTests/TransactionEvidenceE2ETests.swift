import Foundation
import JSON
import XCTest

/// Each stored transaction keeps the JWS its facts came from (`transaction_jws`, schema/0066): the evidence an export
/// carries, so a row can be re-verified against Apple's root offline. The newest signed statement wins, as for the
/// facts themselves.
final class TransactionEvidenceE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "evidence" }

    private func evidence(_ tenant: Tenant) throws -> [[String]] {
        try db.query("""
            SELECT j.transaction_id, h.header || '.' || j.body AS jws,
                (extract(epoch FROM j.signed_date) * 1000)::int8::text AS signed
            FROM transaction_jws j JOIN jws_headers h ON h.sha256 = j.header_sha256
            WHERE j.project_id = \(tenant.id)::uuid ORDER BY j.transaction_id
            """).map {
            [try $0.decode("transaction_id", as: String.self), try $0.decode("jws", as: String.self),
             try $0.decode("signed", as: String.self)]
        }
    }

    func testTheNewestSignedJWSIsKeptAsTheTransactionsEvidence() throws {
        let api = try api
        let tenant = try api.createProject()
        var p = TransactionPayload(bundleId: tenant.bundleId)
        p.signedDate = E2E.ms(-100)
        let first = try p.mint()
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, first, user: "u").status, 201)
        XCTAssertEqual(try evidence(tenant), [[p.transactionId, first, String(p.signedDate)]])

        // An older statement changes neither the facts nor their evidence.
        var older = p
        older.signedDate = E2E.ms(-200)
        older.expiresDate = E2E.ms(10 * 86_400)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try older.mint(), user: "u").status, 201)
        XCTAssertEqual(try evidence(tenant), [[p.transactionId, first, String(p.signedDate)]])

        // A newer one replaces both.
        var newer = p
        newer.signedDate = E2E.ms(-10)
        newer.revocationDate = E2E.ms(-20)
        newer.revocationReason = 0
        let latest = try newer.mint()
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, latest, user: "u").status, 201)
        XCTAssertEqual(try evidence(tenant), [[p.transactionId, latest, String(newer.signedDate)]])
        let payload = try db.query("""
            SELECT (payload->>'signedDate') AS signed FROM transactions
            WHERE project_id = \(tenant.id)::uuid AND transaction_id = \(p.transactionId)
            """).map { try $0.decode("signed", as: String.self) }
        XCTAssertEqual(payload, [String(newer.signedDate)])

        // Another tenant sees none of it.
        let other = try api.createProject()
        XCTAssertEqual(try evidence(other), [])
    }
}
