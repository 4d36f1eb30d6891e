import Foundation
import JSON
import Primitives
import XCTest

/// Per-storefront tax rates (issue 26, item 1; README "Money") against the real `bouncer serve` and PostgreSQL:
/// purchases in three storefronts, then the operator's rates (one changing on a day between two sales), and every
/// reader of proceeds — the revenue chart, realized LTV, the customer list, the export (re-verified) and a webhook
/// event — exact against figures computed by hand; the route's validation and audit. Its own server: the rates are
/// the operator's, shared by every project.
final class TaxRatesE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "tax_rates" }
    override class var serverOverrides: [String: String?] {
        [
            "BOUNCER_ENCRYPTION_KEY": Data((0..<32).map { UInt8($0 * 5 + 1) }).base64EncodedString(),
            "BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "1",
            "BOUNCER_WEBHOOK_RETRY_BASE_SECONDS": "0.1",
            "BOUNCER_WEBHOOK_CONCURRENCY": "1",
        ]
    }

    struct Sale {
        var user: String
        var storefront: String
        var price: Int64
        var start: String
        var refund: String?
    }

    /// Posts each sale as its own monthly subscription in EUR (a prorated refund of half when `refund` is set); the
    /// transaction id and JWS of each.
    private func post(_ api: API, _ tenant: Tenant, _ sales: [Sale]) throws -> [(id: String, jws: String)] {
        var out: [(String, String)] = []
        for sale in sales {
            var p = TransactionPayload(bundleId: tenant.bundleId)
            p.storefront = sale.storefront
            p.purchaseDate = ChartsE2ETests.at(sale.start)
            p.originalPurchaseDate = p.purchaseDate
            p.expiresDate = p.purchaseDate + 30 * 86_400_000
            p.signedDate = p.purchaseDate + 1000
            p.extra = [("price", JSONValue(sale.price)), ("currency", "EUR")]
            if let refund = sale.refund {
                p.revocationDate = ChartsE2ETests.at(refund)
                p.revocationReason = 0
                p.revocationType = "REFUND_PRORATED"
                p.revocationPercentage = 50_000
                p.signedDate = ChartsE2ETests.at(refund) + 1000
            }
            let jws = try p.mint()
            let r = try api.postReceipt(tenant.publicKey, jws, user: sale.user)
            XCTAssertEqual(r.status, 201, r.description)
            out.append((p.transactionId, jws))
        }
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })
        return out
    }

    private func revenue(_ tenant: Tenant, _ filter: String = "") throws
        -> (basis: JSONValue?, totals: [JSONValue?], header: String?)
    {
        let r = try api.client.get("/v1/admin/projects/\(tenant.id)/charts/revenue?from=2023-03-01&to=2023-03-31"
                                   + "&interval=month" + filter, headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        let json = try r.json()
        return (json["proceeds_basis"], ["gross_milli", "proceeds_milli", "refunds_milli", "net_milli"]
            .map { json["totals"]?[$0] }, r.header("Bouncer-Proceeds-Basis"))
    }

    private func putRates(_ body: JSONValue) throws -> HTTPResponse {
        try api.client.send("PUT", "/v1/admin/tax-rates", json: body, headers: E2E.admin)
    }

    func testProceedsAfterEachStorefrontsRateOfItsDayEverywhere() throws {
        let api = try api
        let tenant = try api.createProject()
        let settings = try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/revenue-settings",
                                           json: ["small_business_program": false, "reporting_currency": "EUR"],
                                           headers: E2E.admin)
        XCTAssertEqual(settings.status, 200, settings.description)
        let receiver = try WebhookReceiver()
        let hook = try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/webhook", json: [
            "url": .string(receiver.url), "events": ["subscription.started"],
        ], headers: E2E.admin)
        XCTAssertEqual(hook.status, 200, hook.description)
        let posted = try post(api, tenant, [
            Sale(user: "anna", storefront: "DEU", price: 9990, start: "2023-03-05T12:00:00Z",
                 refund: "2023-03-25T12:00:00Z"),
            Sale(user: "ben", storefront: "FRA", price: 9990, start: "2023-03-06T12:00:00Z"),
            Sale(user: "cem", storefront: "DEU", price: 4990, start: "2023-03-20T12:00:00Z"),
            Sale(user: "dora", storefront: "IRL", price: 4990, start: "2023-03-21T12:00:00Z"),
        ])

        // No rate yet: before tax. 30 % of 9990 is 2997 (6993), of 4990 1497 (3493): proceeds 20972; half of anna's
        // refunded, 4995 of the price and 3497 (3496.5) of her proceeds: net 17475.
        let before = try revenue(tenant)
        XCTAssertEqual(before.basis, "before_tax")
        XCTAssertEqual(before.header, "before_tax")
        XCTAssertEqual(before.totals, [29_960, 20_972, 4995, 17_475])

        // DEU 19 % and FRA 20 % from 2023-01-01 (a rate as a JSON number too), DEU 16 % from 2023-03-15.
        let first = try putRates(["date": "2023-01-01", "rates": ["DEU": "19", "FRA": 20]])
        XCTAssertEqual(first.status, 200, first.description)
        XCTAssertEqual(try first.json(), ["date": "2023-01-01", "stored": 2])
        let second = try putRates(["date": "2023-03-15", "rates": ["DEU": "16.000"]])
        XCTAssertEqual(try second.json(), ["date": "2023-03-15", "stored": 1])
        try AuditLogE2ETests.assertAudited(db, method: "PUT", template: "/v1/admin/tax-rates", second)
        let audit = try db.query("""
            SELECT target, changes::text AS c FROM audit_log WHERE action = 'tax_rates.update' ORDER BY at
            """).map { "\(try $0.decode("target", as: String.self)) \(try $0.decode("c", as: String.self))" }
        XCTAssertEqual(audit, [#"tax_rates:2023-01-01 {"DEU 2023-01-01": [null, "19"], "FRA 2023-01-01": [null, "20"]}"#,
                               #"tax_rates:2023-03-15 {"DEU 2023-03-15": [null, "16"]}"#])

        // anna (DEU, 03-05, 19 %): tax 9990 × 19 / 119 = 1595.04 → 1595; 8395 − 2519 (2518.5) = 5876; her refund
        // (03-25, when DEU is at 16 %) gives back her sale's tax: 2938 of 5876, net 2938.
        // ben (FRA, 20 %): tax 1665; 8325 − 2498 (2497.5) = 5827. cem (DEU, 03-20, 16 %): tax 4990 × 16 / 116 =
        // 688.3 → 688; 4302 − 1291 (1290.6) = 3011. dora (IRL, no rate): 3493, before tax.
        // Proceeds 5876 + 5827 + 3011 + 3493 = 18207; net 18207 − 2938 = 15269; gross and refunds unchanged.
        let after = try revenue(tenant)
        XCTAssertEqual(after.basis, "after_tax")
        XCTAssertEqual(after.header, "after_tax")
        XCTAssertEqual(after.totals, [29_960, 18_207, 4995, 15_269])
        // Germany alone: anna and cem, 9990 + 4990 gross, 5876 + 3011 proceeds, net 8887 − 2938.
        XCTAssertEqual(try revenue(tenant, "&country=DEU").totals, [14_980, 8887, 4995, 5949])
        XCTAssertEqual(try revenue(tenant, "&country=FRA").totals, [9990, 5827, 0, 5827])
        // By day: anna's refund on 03-25 at her sale's rate.
        let daily = try api.client.get("/v1/admin/projects/\(tenant.id)/charts/revenue?from=2023-03-25&to=2023-03-25",
                                       headers: E2E.admin)
        XCTAssertEqual(try daily.json()["totals"]?["net_milli"], -2938)

        // realized_ltv: the four customers of March, net 15269.
        let ltv = try api.client.get("/v1/admin/projects/\(tenant.id)/charts/realized_ltv?from=2023-03-01&to=2023-03-31"
                                     + "&interval=month", headers: E2E.admin)
        XCTAssertEqual(try ltv.json()["totals"]?["customers"], 4)
        XCTAssertEqual(try ltv.json()["totals"]?["net_milli"], 15_269)
        XCTAssertEqual(try ltv.json()["proceeds_basis"], "after_tax")

        // The customer list: each one's net after tax.
        let customers = try api.client.get("/v1/admin/projects/\(tenant.id)/customers?sort=net", headers: E2E.admin)
        XCTAssertEqual(customers.status, 200, customers.description)
        XCTAssertEqual(try customers.json()["proceeds_basis"], "after_tax")
        XCTAssertEqual(try customers.json()["customers"]?.arrayValue?.map {
            "\($0["user_id"]?.stringValue ?? "") \($0["net_milli"]?.description ?? "")"
        }, ["anna 2938", "cem 3011", "dora 3493", "ben 5827"])

        // The export: each row's tax rate and tax, its proceeds and net after them; it re-verifies with `bouncer
        // verify` (the rate is the row's own, the arithmetic is checked).
        let export = try api.client.get("/v1/admin/projects/\(tenant.id)/exports/transactions.csv?from=2023-03-01"
                                        + "&to=2023-03-31&include_jws=true", headers: E2E.admin)
        XCTAssertEqual(export.status, 200, export.description)
        let lines = export.text.split(separator: "\r\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        let header = lines.first?.map(String.init) ?? []
        XCTAssertEqual(Array(header.suffix(3)), ["tax_rate", "tax_milli", "jws"])
        func cell(_ id: String, _ column: String) -> String? {
            guard let row = lines.first(where: { $0.count > 1 && $0[1] == id }),
                  let i = header.firstIndex(of: column), row.indices.contains(i) else { return nil }
            return String(row[i])
        }
        let columns = ["storefront", "commission_percent", "proceeds_milli", "refunded_milli", "net_milli",
                       "net_reporting_milli", "tax_rate", "tax_milli"]
        XCTAssertEqual(columns.map { cell(posted[0].id, $0) }, ["DEU", "30", "5876", "4995", "2938", "2938", "19", "1595"])
        XCTAssertEqual(columns.map { cell(posted[1].id, $0) }, ["FRA", "30", "5827", "0", "5827", "5827", "20", "1665"])
        XCTAssertEqual(columns.map { cell(posted[2].id, $0) }, ["DEU", "30", "3011", "0", "3011", "3011", "16", "688"])
        XCTAssertEqual(columns.map { cell(posted[3].id, $0) }, ["IRL", "30", "3493", "0", "3493", "3493", "0", "0"])
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tax-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("transactions.csv")
        try export.text.write(to: file, atomically: true, encoding: .utf8)
        let verified = try cli(["verify", "--environment", "Sandbox", file.path])
        XCTAssertEqual(verified.stdout, "4 rows: 4 verified, 0 failed\n", verified.stderr)
        // A rate changed in the file no longer matches its proceeds.
        try export.text.replacingOccurrences(of: ",20,1665,", with: ",21,1665,")
            .write(to: file, atomically: true, encoding: .utf8)
        let tampered = try cli(["verify", "--environment", "Sandbox", file.path])
        XCTAssertEqual(tampered.stdout, "4 rows: 3 verified, 1 failed\n", tampered.stderr)

        // A webhook event derived now carries the money after the rates known now: emma (FRA, today) 4990, tax
        // 4990 × 20 / 120 = 831.7 → 832; 4158 − 1247 (1247.4) = 2911.
        var now = TransactionPayload(bundleId: tenant.bundleId)
        now.storefront = "FRA"
        now.purchaseDate = E2E.ms(-3600)
        now.originalPurchaseDate = now.purchaseDate
        now.extra = [("price", 4990), ("currency", "EUR")]
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try now.mint(), user: "emma").status, 201)
        func emmas() throws -> JSONValue? {
            try receiver.events().first { $0["data"]?["transaction_id"]?.stringValue == now.transactionId }
        }
        XCTAssertTrue(try E2E.eventually { try emmas() != nil })
        let event = try XCTUnwrap(try emmas())
        XCTAssertEqual(event["type"], "subscription.started")
        XCTAssertEqual(["price", "currency", "tax", "proceeds", "net", "proceeds_basis"].map { event["data"]?[$0] ?? .null },
                       [4990, "EUR", 832, 2911, 2911, "after_tax"])

        try checkTheRatesTableAndItsValidation()
    }

    /// The table by storefront and day, on a day, and the route's validation (the rates above stay as they were).
    private func checkTheRatesTableAndItsValidation() throws {
        let r = try putRates(["date": "2024-07-01", "rates": ["CHE": "8.1", "JPN": "10", "NOR": "25"]])
        XCTAssertEqual(r.status, 200, r.description)
        XCTAssertEqual(try putRates(["date": "2024-01-01", "rates": ["CHE": "7.7"]]).status, 200)
        let all = try api.client.get("/v1/admin/tax-rates", headers: E2E.admin)
        XCTAssertEqual(all.status, 200, all.description)
        func rows(_ json: JSONValue) -> [String] {
            (json["rates"]?.arrayValue ?? []).filter { ["CHE", "JPN", "NOR"].contains($0["storefront"]?.stringValue ?? "") }
                .map { "\($0["storefront"]?.stringValue ?? "") \($0["date"]?.stringValue ?? "") \($0["rate"]?.stringValue ?? "")" }
        }
        XCTAssertEqual(try all.json()["date"], .null)
        XCTAssertEqual(rows(try all.json()), ["CHE 2024-01-01 7.7", "CHE 2024-07-01 8.1", "JPN 2024-07-01 10",
                                              "NOR 2024-07-01 25"])
        // On a day: each storefront's rate in force (none yet for JPN and NOR on 2024-03-01).
        let march = try api.client.get("/v1/admin/tax-rates?date=2024-03-01", headers: E2E.admin)
        XCTAssertEqual(try march.json()["date"], "2024-03-01")
        XCTAssertEqual(rows(try march.json()), ["CHE 2024-01-01 7.7"])
        let july = try api.client.get("/v1/admin/tax-rates?date=2024-07-02", headers: E2E.admin)
        XCTAssertEqual(rows(try july.json()), ["CHE 2024-07-01 8.1", "JPN 2024-07-01 10", "NOR 2024-07-01 25"])
        XCTAssertEqual(try db.count("tax_rates"), 7)

        // Every invalid member named, nothing stored.
        let bad = try putRates(["date": "2024-02-30", "rates": ["deu": "19", "FRA": "100", "ITA": "-1", "ESP": "21.0001",
                                                               "NLD": "1e1", "AUT": 20.5, "BEL": 21]])
        XCTAssertEqual(bad.status, 400)
        let message = "Expected a percent from 0 to below 100, at most 3 decimals"
        XCTAssertEqual(try bad.errorFields(), [
            "error": "Validation error", "code": "VALIDATION_ERROR",
            "suggestion": .string("Request body requires date (YYYY-MM-DD, the first day the rates apply) and rates "
                + "(an object of storefronts, ISO 3166-1 alpha-3 such as DEU, to the tax included in their prices as a "
                + "percent, a string or number from 0 to below 100 with at most 3 decimals, e.g. {\"DEU\": \"19\", "
                + "\"CHE\": \"8.1\"}; at most 500 storefronts)."),
            "details": [
                ["path": ["date"], "message": "Expected a date as YYYY-MM-DD"],
                ["path": ["rates", "deu"], "message": "Expected ISO 3166-1 alpha-3, e.g. DEU"],
                ["path": ["rates", "FRA"], "message": .string(message)],
                ["path": ["rates", "ITA"], "message": .string(message)],
                ["path": ["rates", "ESP"], "message": .string(message)],
                ["path": ["rates", "NLD"], "message": .string(message)],
            ],
        ])
        let empty = try putRates(["date": "2024-02-01", "rates": [:]])
        XCTAssertEqual(try empty.errorFields()["details"], [["path": ["rates"], "message": "Required: an object of 1 to 500 rates"]])
        let query = try api.client.get("/v1/admin/tax-rates?date=2024-7-1", headers: E2E.admin)
        XCTAssertEqual(query.status, 400)
        XCTAssertEqual(try query.errorFields(), [
            "error": "Validation error", "code": "VALIDATION_ERROR",
            "suggestion": "Optional query parameter: date (YYYY-MM-DD): each storefront's rate in force that day.",
            "details": [["path": ["date"], "message": "Expected a date as YYYY-MM-DD"]],
        ])
        XCTAssertEqual(try db.count("tax_rates"), 7)
        XCTAssertEqual(rows(try api.client.get("/v1/admin/tax-rates?date=2024-07-02", headers: E2E.admin).json()),
                       ["CHE 2024-07-01 8.1", "JPN 2024-07-01 10", "NOR 2024-07-01 25"])
    }
}
