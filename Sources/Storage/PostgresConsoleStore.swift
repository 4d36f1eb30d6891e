import Domain
import Foundation
import Postgres

/// Console sessions in `console_sessions` (by token hash). Errors: see `StorageErrors`.
public final class PostgresConsoleSessionStore: ConsoleSessionStore {
    private let pool: ConnectionPool

    /// A store over `pool`; the pool's lifetime is the caller's.
    public init(pool: ConnectionPool) {
        self.pool = pool
    }

    /// Inserts the session and deletes expired ones in the same transaction.
    public func createSession(tokenHash: [UInt8], createdAt: Date, expiresAt: Date) throws {
        try StorageErrors.mapping("create console session") {
            try pool.transaction { connection in
                _ = try connection.execute("DELETE FROM console_sessions WHERE expires_at <= \(createdAt)")
                _ = try connection.execute("""
                    INSERT INTO console_sessions (token_hash, created_at, expires_at)
                    VALUES (\(tokenHash), \(createdAt), \(expiresAt))
                    """)
            }
        }
    }

    /// The expiry of a live session.
    public func sessionExpiry(tokenHash: [UInt8], at now: Date) throws -> Date? {
        try StorageErrors.mapping("console session") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT expires_at FROM console_sessions WHERE token_hash = \(tokenHash) AND expires_at > \(now)
                    """).first.map { try $0.decode("expires_at", as: Date.self) }
            }
        }
    }

    /// Deletes the session.
    public func deleteSession(tokenHash: [UInt8]) throws -> Bool {
        try StorageErrors.mapping("delete console session") {
            try pool.withConnection { connection in
                try connection.execute("DELETE FROM console_sessions WHERE token_hash = \(tokenHash)") > 0
            }
        }
    }
}

/// The revenue dashboard's overview, in a few range scans over `transactions` and `purchases` (indexes of
/// `schema/0015_console.sql`), each bounded by the requested days rather than by the table's size.
///
/// Active counts use intervals: a transaction is active from its purchase until the earlier of its expiry and its
/// revocation (no expiry: until revoked; consumables never). The count at the end of each day is the count at the
/// range's start plus the intervals that began minus those that ended by then, so no query joins days × rows.
public final class PostgresOverviewMetricsStore: OverviewMetricsStore {
    private let pool: ConnectionPool

    /// A store over `pool`; the pool's lifetime is the caller's.
    public init(pool: ConnectionPool) {
        self.pool = pool
    }

    /// The interval's end: `LEAST` ignores NULLs, so a revoked transaction ends at its revocation, an unrevoked
    /// one without expiry never ends. Must match `transactions_end_idx`.
    private static let end = "LEAST(t.expires_date, t.revocation_date)"

    /// Entitlements the transaction's product maps to (0 when unmapped).
    private static let weight = "COALESCE(cardinality(p.entitlements), 0)"

    private static let joinProducts = "LEFT JOIN products p ON p.project_id = t.project_id AND p.product_id = t.product_id"

    /// The overview.
    public func overview(projectId: UUID, range: OverviewRange, environment: StoreEnvironment?, now: Date) throws
        -> OverviewMetrics
    {
        let lo = range.from
        let hi = range.to
        let env = environment?.rawValue
        let dayCount = max(0, range.days)
        var days = (0..<dayCount).map { OverviewDay(day: lo.addingTimeInterval(Double($0) * 86_400)) }
        func index(_ row: Row) throws -> Int? {
            let i = try row.decode("d", as: Int.self)
            return days.indices.contains(i) ? i : nil
        }
        let (revenue, mrr) = try StorageErrors.mapping("overview metrics") { () throws -> ([String: Int64], [String: Int64]) in
            try pool.withConnection { c in
                // Active at the range's start.
                let base = try c.query("""
                    SELECT count(*) FILTER (WHERE t.expires_date IS NOT NULL) AS subs,
                           COALESCE(sum(\(unsafeSQL: Self.weight)), 0)::int8 AS ents
                    FROM transactions t \(unsafeSQL: Self.joinProducts)
                    WHERE t.project_id = \(projectId) AND t.type <> 'Consumable' AND t.purchase_date <= \(lo)
                      AND (\(unsafeSQL: Self.end) > \(lo) OR \(unsafeSQL: Self.end) IS NULL)
                      AND (\(env)::text IS NULL OR t.environment = \(env)::text)
                    """).first
                var subs = try base?.decode("subs", as: Int.self) ?? 0
                var ents = try base?.decode("ents", as: Int.self) ?? 0
                var deltaSubs = [Int](repeating: 0, count: dayCount)
                var deltaEnts = [Int](repeating: 0, count: dayCount)

                // Starts by day: also new purchases and renewals.
                for row in try c.query("""
                    SELECT floor(extract(epoch FROM t.purchase_date - \(lo)) / 86400)::int8 AS d,
                           count(*) FILTER (WHERE t.type <> 'Consumable' AND t.expires_date IS NOT NULL) AS subs,
                           COALESCE(sum(\(unsafeSQL: Self.weight)) FILTER (WHERE t.type <> 'Consumable'), 0)::int8 AS ents,
                           count(*) FILTER (WHERE t.transaction_id = t.original_transaction_id) AS new_purchases,
                           count(*) FILTER (WHERE t.transaction_id <> t.original_transaction_id) AS renewals
                    FROM transactions t \(unsafeSQL: Self.joinProducts)
                    WHERE t.project_id = \(projectId) AND t.purchase_date > \(lo) AND t.purchase_date < \(hi)
                      AND (\(env)::text IS NULL OR t.environment = \(env)::text)
                    GROUP BY 1
                    """) {
                    guard let i = try index(row) else { continue }
                    deltaSubs[i] += try row.decode("subs", as: Int.self)
                    deltaEnts[i] += try row.decode("ents", as: Int.self)
                    days[i].newPurchases = try row.decode("new_purchases", as: Int.self)
                    days[i].renewals = try row.decode("renewals", as: Int.self)
                }
                // Ends by day (only those already past: today's later expiries have not happened).
                for row in try c.query("""
                    SELECT floor(extract(epoch FROM \(unsafeSQL: Self.end) - \(lo)) / 86400)::int8 AS d,
                           count(*) FILTER (WHERE t.expires_date IS NOT NULL) AS subs,
                           COALESCE(sum(\(unsafeSQL: Self.weight)), 0)::int8 AS ents
                    FROM transactions t \(unsafeSQL: Self.joinProducts)
                    WHERE t.project_id = \(projectId) AND \(unsafeSQL: Self.end) > \(lo)
                      AND \(unsafeSQL: Self.end) < \(hi) AND \(unsafeSQL: Self.end) <= \(now)
                      AND t.type <> 'Consumable'
                      AND (\(env)::text IS NULL OR t.environment = \(env)::text)
                    GROUP BY 1
                    """) {
                    guard let i = try index(row) else { continue }
                    deltaSubs[i] -= try row.decode("subs", as: Int.self)
                    deltaEnts[i] -= try row.decode("ents", as: Int.self)
                }
                for i in days.indices {
                    subs += deltaSubs[i]
                    ents += deltaEnts[i]
                    days[i].activeSubscriptions = subs
                    days[i].activeEntitlements = ents
                }
                // Refunds by day.
                for row in try c.query("""
                    SELECT floor(extract(epoch FROM t.revocation_date - \(lo)) / 86400)::int8 AS d, count(*) AS n
                    FROM transactions t
                    WHERE t.project_id = \(projectId) AND t.revocation_date IS NOT NULL
                      AND t.revocation_date >= \(lo) AND t.revocation_date < \(hi)
                      AND (\(env)::text IS NULL OR t.environment = \(env)::text)
                    GROUP BY 1
                    """) {
                    guard let i = try index(row) else { continue }
                    days[i].refunds = try row.decode("n", as: Int.self)
                }
                // Expirations: the purchase's latest transaction expired that day (so it was not renewed).
                for row in try c.query("""
                    SELECT floor(extract(epoch FROM p.expires_date - \(lo)) / 86400)::int8 AS d, count(*) AS n
                    FROM purchases p
                    WHERE p.project_id = \(projectId) AND p.expires_date >= \(lo) AND p.expires_date < \(hi)
                      AND p.expires_date <= \(now) AND p.revocation_date IS NULL
                      AND (\(env)::text IS NULL OR p.environment = \(env)::text)
                    GROUP BY 1
                    """) {
                    guard let i = try index(row) else { continue }
                    days[i].expirations = try row.decode("n", as: Int.self)
                }
                // Trial conversions: a free trial ending that day, followed by a paid transaction of its subscription.
                for row in try c.query("""
                    SELECT floor(extract(epoch FROM t.expires_date - \(lo)) / 86400)::int8 AS d, count(*) AS n
                    FROM transactions t
                    WHERE t.project_id = \(projectId) AND t.offer_discount_type = 'FREE_TRIAL'
                      AND t.expires_date >= \(lo) AND t.expires_date < \(hi)
                      AND (\(env)::text IS NULL OR t.environment = \(env)::text)
                      AND EXISTS (SELECT 1 FROM transactions n
                                  WHERE n.project_id = t.project_id AND n.environment = t.environment
                                    AND n.original_transaction_id = t.original_transaction_id
                                    AND n.transaction_id <> t.transaction_id AND n.purchase_date >= t.purchase_date
                                    AND n.price_milli > 0)
                    GROUP BY 1
                    """) {
                    guard let i = try index(row) else { continue }
                    days[i].trialConversions = try row.decode("n", as: Int.self)
                }
                // Revenue by day and currency.
                var revenue: [String: Int64] = [:]
                for row in try c.query("""
                    SELECT floor(extract(epoch FROM t.purchase_date - \(lo)) / 86400)::int8 AS d, t.currency,
                           sum(t.price_milli)::int8 AS milli
                    FROM transactions t
                    WHERE t.project_id = \(projectId) AND t.purchase_date >= \(lo) AND t.purchase_date < \(hi)
                      AND t.currency IS NOT NULL AND t.price_milli IS NOT NULL
                      AND (\(env)::text IS NULL OR t.environment = \(env)::text)
                    GROUP BY 1, 2
                    """) {
                    guard let i = try index(row) else { continue }
                    let currency = try row.decode("currency", as: String.self)
                    let milli = try row.decode("milli", as: Int64.self)
                    days[i].revenue[currency, default: 0] &+= milli
                    revenue[currency, default: 0] &+= milli
                }
                // MRR at the end of the range (or now): each active subscription's price over its period, per 30 days.
                let at = min(hi, now)
                var mrr: [String: Int64] = [:]
                for row in try c.query("""
                    SELECT t.currency, round(sum(t.price_milli::numeric * 2592000
                               / GREATEST(extract(epoch FROM t.expires_date - t.purchase_date), 86400)))::int8 AS milli
                    FROM transactions t
                    WHERE t.project_id = \(projectId) AND \(unsafeSQL: Self.end) > \(at) AND t.purchase_date <= \(at)
                      AND t.expires_date IS NOT NULL AND t.currency IS NOT NULL AND t.price_milli IS NOT NULL
                      AND (\(env)::text IS NULL OR t.environment = \(env)::text)
                    GROUP BY 1
                    """) {
                    mrr[try row.decode("currency", as: String.self)] = try row.decode("milli", as: Int64.self)
                }
                return (revenue, mrr)
            }
        }
        return OverviewMetrics(days: days, revenue: revenue, mrr: mrr)
    }
}
