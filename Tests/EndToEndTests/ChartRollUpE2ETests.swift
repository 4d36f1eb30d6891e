import Foundation
import JSON
import TestSupport
import XCTest

/// The charts that read the deriver's roll-ups without a filter (the runs of paid service, schema/0078; the spans of
/// MRR, schema/0085) against the sweep over the periods that answers them under a filter, on generated purchases:
/// renewals with gaps and overlaps, upgrades to a yearly plan and back, weekly periods, full and prorated refunds,
/// three currencies (one without a rate), transactions arriving out of order (each roll-up then starts from an earlier
/// change), some running now. Equal day by day, week by week, month by month and up to now; and a replay of the log
/// writes the same roll-ups again.
extension ChartsE2ETests {
    func testRollUpsAndSweepAgreeOnGeneratedPurchases() throws {
        let api = try api
        let tenant = try api.createProject()
        _ = try putEuroRates(api, [("2025-01-01", "1.1"), ("2025-03-01", "1.2")])
        for (purchase, payloads) in generatedPurchases(tenant, seed: 26, count: 24).enumerated() {
            for p in payloads {
                let r = try api.postReceipt(tenant.publicKey, try p.mint(), user: "g\(purchase)")
                XCTAssertEqual(r.status, 201, r.description)
            }
        }
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })

        let iso = ISO8601DateFormatter()
        let today = iso.string(from: Date()).prefix(10)
        let recent = iso.string(from: Date() - 80 * 86_400).prefix(10)
        func compare() throws -> [String] {
            var seen: [String] = []
            for query in ["from=2025-01-01&to=2025-06-30&interval=day", "from=2025-01-01&to=2025-12-31&interval=week",
                          "from=2025-01-01&to=2025-12-31&interval=month", "from=\(recent)&to=\(today)&interval=day",
                          "from=\(recent)&to=\(today)&interval=week"] {
                for (name, columns) in Self.bothPaths {
                    let rolled = try chart(tenant, name, query)
                    let swept = try chart(tenant, name, query + "&environment=Sandbox&country=USA")
                    XCTAssertEqual(table(rolled, columns), table(swept, columns), "\(name) \(query)")
                    XCTAssertEqual(Self.unconverted(rolled), Self.unconverted(swept), "\(name) \(query)")
                    seen.append(table(rolled, columns).description + Self.unconverted(rolled).description)
                }
            }
            return seen
        }
        let before = try compare()
        // Something moves: MRR on some day, some movement of each kind that occurs.
        XCTAssertTrue(before.contains { $0.contains("\"4990\"") || $0.contains("\"9990\"") })

        // A replay from the log (0062's rows) after removing the roll-ups writes the same ones.
        func rollUps() throws -> [String] {
            try db.query("""
                SELECT 'r ' || original_transaction_id || ' ' || starts_at::text || ' ' || ends_at::text AS r
                FROM revenue_runs WHERE project_id = \(tenant.id)::uuid
                UNION ALL SELECT 'd ' || day::text || ' ' || starts || ' ' || ends FROM revenue_run_days
                WHERE project_id = \(tenant.id)::uuid
                UNION ALL SELECT 'v ' || original_transaction_id || ' ' || starts_at::text || ' ' || ends_at::text
                    || ' ' || currency || ' ' || monthly_milli || ' ' || paid_since::text FROM revenue_values
                WHERE project_id = \(tenant.id)::uuid
                UNION ALL SELECT 'c ' || original_transaction_id || ' ' || first_at::text || ' ' || months
                FROM revenue_cohorts WHERE project_id = \(tenant.id)::uuid
                UNION ALL SELECT 'w ' || day::text || ' ' || currency || ' ' || monthly_milli || ' ' || n
                FROM revenue_value_days WHERE project_id = \(tenant.id)::uuid
                UNION ALL SELECT 'm ' || day::text || ' ' || currency || ' ' || kind || ' ' || amount_milli || ' ' || n
                FROM revenue_movement_days WHERE project_id = \(tenant.id)::uuid ORDER BY 1
                """).map { try $0.decode("r", as: String.self) }
        }
        let incremental = try rollUps()
        XCTAssertGreaterThan(incremental.filter { $0.hasPrefix("v ") }.count, 24)
        XCTAssertGreaterThan(incremental.filter { $0.hasPrefix("m ") }.count, 10)
        try rebuildRevenue(tenant)
        XCTAssertEqual(try rollUps(), incremental)
        XCTAssertEqual(try compare(), before)
    }

    /// Generated purchases, each its transactions in the order to post them: renewals with gaps and overlaps,
    /// upgrades to a yearly plan and back, weekly periods, free trials, full and prorated refunds, three currencies
    /// (one without a rate), some running now, some in reverse order.
    func generatedPurchases(_ tenant: Tenant, seed: UInt64, count: Int) -> [[TransactionPayload]] {
        // A fixed sequence, so a failure reproduces.
        var generator = SeededGenerator(seed: seed)
        func next(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &generator) }
        let day: Int64 = 86_400_000
        let base = ChartsE2ETests.at("2025-01-01T00:00:00Z")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return (0..<count).map { purchase in
            // A few purchases run now; the others in the first half of 2025.
            var start = purchase % 6 == 5 ? now - Int64(20 + next(40)) * day + Int64(next(86_400)) * 1000
                : base + Int64(next(120)) * day + Int64(next(86_400)) * 1000
            let currency = ["USD", "EUR", "GBP"][next(3)]
            var payloads: [TransactionPayload] = []
            for _ in 0..<(1 + next(5)) {
                var p = TransactionPayload(bundleId: tenant.bundleId, originalTransactionId: payloads.first?.transactionId)
                let plan = next(10)
                let length: Int64 = plan < 6 ? 30 * day : plan < 8 ? 7 * day : 365 * day
                p.productId = plan < 6 ? "com.e2e.pro.monthly" : plan < 8 ? "com.e2e.pro.weekly" : "com.e2e.pro.yearly"
                p.purchaseDate = start
                p.originalPurchaseDate = payloads.first?.purchaseDate ?? start
                p.expiresDate = start + length
                p.extra = [("price", JSONValue(Int64([0, 990, 4990, 9990, 59_990][next(5)]))),
                           ("currency", .string(currency))]
                if next(8) == 0 { p.extra.append(("offerDiscountType", "FREE_TRIAL")) }
                switch next(8) {
                case 0:
                    p.revocationDate = start + length / Int64(2 + next(4))
                    p.revocationReason = 0
                    p.revocationType = "REFUND_FULL"
                case 1:
                    p.revocationDate = start + length / 3
                    p.revocationReason = 0
                    p.revocationType = "REFUND_PRORATED"
                    p.revocationPercentage = 50_000
                default: break
                }
                payloads.append(p)
                // The next period: right at the end (a renewal), a gap, or an overlap (an upgrade).
                start += [length, length, length + Int64(next(20)) * day, length / 2][next(4)]
            }
            // Out of order: the later transactions first, now and then.
            if next(3) == 0 { payloads.reverse() }
            return payloads
        }
    }
}
