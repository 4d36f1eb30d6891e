import Crypto
import Foundation
import JSON
import Primitives
import XCTest

/// `GET /v1/admin/projects/:id/exports/transactions.csv`, `bouncer export transactions` and `bouncer verify FILE` on
/// the export (issue 26): every transaction with its money and the SHA-256 of its JWS, re-verified row by row against
/// the (test) root; a tampered row fails with its row number; another tenant's rows never appear.
final class TransactionExportE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "exports" }

    static let header = "environment,transaction_id,original_transaction_id,product_id,type,storefront,purchase_date,"
        + "expires_date,revocation_date,signed_date,currency,price_milli,commission_percent,proceeds_milli,"
        + "refund_milli_percent,refunded_milli,net_milli,reporting_currency,price_reporting_milli,"
        + "proceeds_reporting_milli,net_reporting_milli,jws_sha256,tax_rate,tax_milli"

    private func sha(_ jws: String) -> String { Hex.encode(Digest.sha256(Array(jws.utf8))) }

    /// Posts two priced purchases in March 2023 (one in CHF, half refunded) and one in May; the JWS of each by id.
    private func scenario(_ api: API, _ tenant: Tenant) throws -> [(id: String, jws: String)] {
        // 1 CHF = 1.25 USD, from 2023-01-01 (CHF as its own base: no other test's rates reach it).
        let r = try api.client.send("PUT", "/v1/admin/exchange-rates",
                                    json: ["date": "2023-01-01", "base": "CHF", "rates": ["USD": "1.25"]],
                                    headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        var usd = TransactionPayload(bundleId: tenant.bundleId)
        usd.purchaseDate = ChartsE2ETests.at("2023-03-05T12:00:00Z")
        usd.originalPurchaseDate = usd.purchaseDate
        usd.expiresDate = ChartsE2ETests.at("2023-04-05T12:00:00Z")
        usd.signedDate = ChartsE2ETests.at("2023-03-05T12:00:01Z")
        usd.extra = [("price", 9990), ("currency", "USD")]
        var chf = TransactionPayload(bundleId: tenant.bundleId)
        chf.purchaseDate = ChartsE2ETests.at("2023-03-10T12:00:00Z")
        chf.originalPurchaseDate = chf.purchaseDate
        chf.expiresDate = ChartsE2ETests.at("2023-04-10T12:00:00Z")
        chf.signedDate = ChartsE2ETests.at("2023-03-20T12:00:01Z")
        chf.revocationDate = ChartsE2ETests.at("2023-03-20T12:00:00Z")
        chf.revocationReason = 0
        chf.revocationType = "REFUND_PRORATED"
        chf.revocationPercentage = 50_000
        chf.extra = [("price", 4990), ("currency", "CHF")]
        var later = TransactionPayload(bundleId: tenant.bundleId)
        later.purchaseDate = ChartsE2ETests.at("2023-05-01T12:00:00Z")
        later.extra = [("price", 1990), ("currency", "USD")]
        var out: [(String, String)] = []
        for p in [usd, chf, later] {
            let jws = try p.mint()
            XCTAssertEqual(try api.postReceipt(tenant.publicKey, jws, user: "buyer").status, 201)
            out.append((p.transactionId, jws))
        }
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })
        return out
    }

    func testExportIsExactAndReverifiesRowByRow() throws {
        let api = try api
        let tenant = try api.createProject()
        let other = try api.createProject()
        let posted = try scenario(api, tenant)
        _ = try scenario(api, other)
        let (usd, chf) = (posted[0], posted[1])

        let path = "/v1/admin/projects/\(tenant.id)/exports/transactions.csv?from=2023-03-01&to=2023-03-31"
        let r = try api.client.get(path, headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        XCTAssertEqual(r.header("Content-Type"), "text/csv; charset=utf-8")
        XCTAssertEqual(r.header("Transfer-Encoding"), "chunked")
        XCTAssertEqual(r.header("Content-Disposition"), "attachment; filename=\"transactions.csv\"")
        let usdRow = "Sandbox,\(usd.id),\(usd.id),com.e2e.pro.monthly,Auto-Renewable Subscription,USA,"
            + "2023-03-05T12:00:00.000Z,2023-04-05T12:00:00.000Z,,2023-03-05T12:00:01.000Z,USD,9990,30,6993,0,0,6993,"
            + "USD,9990,6993,6993,\(sha(usd.jws)),0,0"
        // 4990 CHF: proceeds 4990 − 1497 = 3493; half refunded: 2495 of the price, 1747 of the proceeds (1746.5
        // rounded away from zero), net 1746. In USD at 1.25: 6238 (6237.5), 4366, 4366 − 2184 (2183.75) = 2182.
        let chfRow = "Sandbox,\(chf.id),\(chf.id),com.e2e.pro.monthly,Auto-Renewable Subscription,USA,"
            + "2023-03-10T12:00:00.000Z,2023-04-10T12:00:00.000Z,2023-03-20T12:00:00.000Z,2023-03-20T12:00:01.000Z,"
            + "CHF,4990,30,3493,50000,2495,1746,USD,6238,4366,2182,\(sha(chf.jws)),0,0"
        let rows = [(usd.id, usdRow), (chf.id, chfRow)].sorted { $0.0 < $1.0 }.map(\.1)
        XCTAssertEqual(r.text, ([Self.header] + rows).map { $0 + "\r\n" }.joined())

        // The CLI writes the same bytes; with its JWS, the file re-verifies row by row.
        let cli = try self.cli(["export", "transactions", "--project", tenant.id, "--from", "2023-03-01",
                                "--to", "2023-03-31"])
        XCTAssertEqual(cli.status, 0, cli.stderr)
        XCTAssertEqual(cli.stdout, r.text)
        XCTAssertTrue(cli.stderr.hasSuffix("exported 2 transactions\n"), cli.stderr)
        let withJWS = try api.client.get(path + "&include_jws=true", headers: E2E.admin)
        XCTAssertEqual(withJWS.status, 200)
        let jwsOf = [usd.id: usd.jws, chf.id: chf.jws]
        let full = ([Self.header + ",jws"] + zip([usd.id, chf.id].sorted(), rows).map { "\($1),\(jwsOf[$0] ?? "")" })
            .map { $0 + "\r\n" }.joined()
        XCTAssertEqual(withJWS.text, full)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("transactions.csv")
        try full.write(to: file, atomically: true, encoding: .utf8)
        let verified = try self.cli(["verify", "--environment", "Sandbox", file.path])
        XCTAssertEqual(verified.status, 0, verified.stderr)
        XCTAssertEqual(verified.stdout, "2 rows: 2 verified, 0 failed\n")

        // A tampered row (the CHF net raised) fails with its row number; the other still verifies.
        let chfLine = [usd.id, chf.id].sorted().firstIndex(of: chf.id).map { $0 + 1 } ?? 0
        try full.replacingOccurrences(of: ",1746,USD,", with: ",2746,USD,")
            .write(to: file, atomically: true, encoding: .utf8)
        let tampered = try self.cli(["verify", "--environment", "Sandbox", file.path])
        XCTAssertEqual(tampered.status, 1, tampered.stderr)
        XCTAssertEqual(tampered.stdout, "2 rows: 1 verified, 1 failed\n")
        XCTAssertEqual(tampered.stderr, "row \(chfLine) (line \(chfLine + 1), transaction \(chf.id)): net_milli 2746 "
                       + "is not 1746 (from the signed price and refund)\n")

        // Another project's key may not export this one; the other project's export holds only its own rows.
        let own = try api.client.get("/v1/admin/projects/\(other.id)/exports/transactions.csv?from=2023-03-01&to=2023-03-31",
                                     headers: E2E.admin)
        XCTAssertEqual(own.status, 200)
        XCTAssertFalse(own.text.contains(usd.id) || own.text.contains(chf.id))
        XCTAssertEqual(own.text.split(separator: "\r\n").count, 3)

        // Bad parameters are a 400 with details; no export of a project that does not exist.
        let bad = try api.client.get("/v1/admin/projects/\(tenant.id)/exports/transactions.csv?from=2023-3-1&include_jws=yes",
                                     headers: E2E.admin)
        XCTAssertEqual(bad.status, 400)
        XCTAssertEqual(try bad.errorFields()["details"]?.arrayValue?.count, 2)
        let missing = try api.client.get("/v1/admin/projects/\(UUID().uuidString.lowercased())/exports/transactions.csv",
                                         headers: E2E.admin)
        XCTAssertEqual(missing.status, 404)
    }
}
