import Domain
import Foundation
import Postgres
import Storage
import TestSupport
import XCTest

/// The overview's "active at the range's start": each edge of 0018's split (intervals of at most 32 days, longer
/// ones, endless ones) and of the day bounds (an end exactly at the range's start or end, a start on its first day),
/// read from the rollups of `schema/0035_overview_days.sql` on a real PostgreSQL.
final class OverviewStoreTests: XCTestCase {
    private func date(_ text: String) throws -> Date {
        try XCTUnwrap(ISO8601DateFormatter().date(from: text), text)
    }

    func testActiveAtStartCountsShortLongAndEndlessIntervalsExactlyOnce() throws {
        let stores = try TestStores.make(label: "overview")
        defer { stores.close() }
        let project = try stores.makeProject()
        let sub = "Auto-Renewable Subscription"
        // (id, original, type, environment, purchase, expires, revocation)
        let rows: [(String, String, String, String, String, String?, String?)] = [
            ("a", "oa", sub, "Production", "2026-02-01T10:00:00Z", "2026-03-03T00:00:00Z", nil),  // ~30 days, active
            ("b", "ob", sub, "Production", "2026-01-29T12:00:00Z", "2026-03-02T12:00:00Z", nil),  // exactly 32 days, active
            ("b2", "ob2", sub, "Production", "2026-01-28T00:00:01Z", "2026-03-01T00:00:01Z", nil),  // 32 days from 1 s into the window
            ("c", "oc", sub, "Production", "2026-01-28T00:00:00Z", "2026-03-01T00:00:01Z", nil),  // 32 days + 1 s, active
            ("d", "od", sub, "Production", "2025-06-01T00:00:00Z", "2026-06-01T00:00:00Z", nil),  // a year, active
            ("e", "e", "Non-Consumable", "Production", "2025-01-01T00:00:00Z", nil, nil),       // endless: not a subscription
            ("f", "of", sub, "Production", "2026-01-30T00:00:00Z", "2026-03-01T00:00:00Z", nil),  // ended at the start
            ("g", "og", sub, "Production", "2026-02-20T00:00:00Z", "2026-03-22T00:00:00Z", "2026-02-10T00:00:00Z"),  // revoked before
            ("h", "h", "Consumable", "Production", "2026-02-15T00:00:00Z", nil, nil),            // never active
            ("i", "oi", sub, "Sandbox", "2026-02-10T00:00:00Z", "2026-03-12T00:00:00Z", nil),     // active, Sandbox
            ("j", "oj", sub, "Production", "2026-01-28T00:00:00Z", "2026-02-28T00:00:00Z", nil),  // ended before
            ("k", "ok", sub, "Production", "2026-01-28T00:00:00Z", "2026-03-01T12:00:00Z", nil),  // 32.5 days, active
            ("m", "m", sub, "Production", "2026-03-01T00:00:00Z", "2026-03-31T00:00:00Z", nil),   // starts on day 0
            ("n", "n", sub, "Production", "2026-03-03T00:00:00Z", "2026-04-02T00:00:00Z", nil),   // starts after the range
        ]
        // Recorded as receipts are (the log carries them to the rollups; the overview reads pending rows too).
        let types: [String: ProductType] = [sub: .autoRenewable, "Non-Consumable": .nonConsumable,
                                            "Consumable": .consumable]
        for (id, original, type, environment, purchase, expires, revocation) in rows {
            let facts = TransactionFacts(
                transactionId: id, originalTransactionId: original, productId: "pro", type: try XCTUnwrap(types[type]),
                environment: StoreEnvironment(rawValue: environment), purchaseDate: try date(purchase),
                originalPurchaseDate: try date(purchase), expiresDate: try expires.map(date),
                revocationDate: try revocation.map(date), revocationReason: revocation == nil ? nil : 0,
                appAccountToken: nil, ownershipType: .purchased, signedDate: try date(purchase),
                payloadJSON: ["d", "i", "m"].contains(id) ? #"{"price": 9990, "currency": "USD"}"# : "{}")
            _ = try stores.purchases.recordTransaction(facts, userId: nil, deviceId: nil, project: project,
                                                       now: try date(purchase))
        }
        let store = PostgresOverviewMetricsStore(pool: stores.pool)
        let range = OverviewRange(from: try date("2026-03-01T00:00:00Z"), to: try date("2026-03-03T00:00:00Z"))
        let now = try date("2026-04-01T00:00:00Z")
        // At the start: a, b, b2, c, d, i, k. Day 0: + m − b2 − c − k (f ended exactly at the start: not counted twice).
        // Day 1: − b (a ends exactly at the range's end: not within it).
        let all = try store.overview(projectId: project.id, range: range, environment: nil, now: now)
        XCTAssertEqual(all.days.map(\.activeSubscriptions), [5, 4])
        XCTAssertEqual(all.days.map(\.newPurchases), [1, 0])
        XCTAssertEqual(all.days.map(\.renewals), [0, 0])
        // MRR at the range's end: d (9.99 a year → 9990 · 30 / 365), i and m (9.99 per 30 days); a ends exactly then.
        XCTAssertEqual(all.mrr, ["USD": 20_801])
        let production = try store.overview(projectId: project.id, range: range, environment: .production, now: now)
        XCTAssertEqual(production.days.map(\.activeSubscriptions), [4, 3])
        XCTAssertEqual(production.mrr, ["USD": 10_811])
        let sandbox = try store.overview(projectId: project.id, range: range, environment: .sandbox, now: now)
        XCTAssertEqual(sandbox.days.map(\.activeSubscriptions), [1, 1])
    }
}
