import Domain
import Foundation
import Postgres
import Storage

// The overview as main computed it before 0035/0036, from six indexes on transactions and purchases (0015, 0018):
// kept verbatim as the specification of the rollup-based PostgresOverviewMetricsStore (OverviewRollupTests runs both
// on the same data and compares them). Only the day of `lo` is written as SQL rather than formatted in Swift. The
// indexes are gone, so on a test database these statements scan.
//
/// The revenue dashboard's overview, in a few range scans over `transactions` and `purchases`, each an index-only
/// scan of an index of `schema/0015_console.sql` or `schema/0018_overview.sql` bounded by the requested days rather
/// than by the table's size. Per-day statements name the UTC day as the day indexes do (`utcDay`), so PostgreSQL
/// groups in index order; they keep the exact instant bounds as well, so a range not on midnights stays exact.
///
/// Active counts use intervals: a transaction is active from its purchase until the earlier of its expiry and its
/// revocation (no expiry: until revoked; consumables never). The count at the end of each day is the count at the
/// range's start plus the intervals that began minus those that ended by then, so no query joins days × rows.
/// Entitlements weigh each interval by its product's mapped entitlements, read once from `products` (small) rather
/// than joined per row.
final class OverviewSpecification: OverviewMetricsStore {
    private let pool: ConnectionPool

    /// A store over `pool`; the pool's lifetime is the caller's.
    init(pool: ConnectionPool) {
        self.pool = pool
    }

    /// The interval's end: `LEAST(expires_date, revocation_date)`, a generated column (`LEAST` ignores NULLs, so a
    /// revoked transaction ends at its revocation, an unrevoked one without expiry never ends).
    private static let end = "t.ends_at"

    /// The longest interval found by start rather than by end when counting what is active at an instant: a month
    /// (28–31 days) and a day to spare. Must match the `interval '32 days'` of the statements and of
    /// `transactions_long_idx` (`schema/0018_overview.sql`).
    static let shortSpan: TimeInterval = 32 * 86_400

    /// The overview.
    func overview(projectId: UUID, range: OverviewRange, environment: StoreEnvironment?, now: Date) throws
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
        /// `(day index expression)` of a timestamp column: whole UTC days since `lo`.
        func day(_ column: String) -> String { "((\(column) AT TIME ZONE 'UTC')::date - " }
        /// The UTC day of a timestamp column, spelt as the day indexes of `schema/0018_overview.sql` spell it. Bounds
        /// on it are written `($n AT TIME ZONE 'UTC')::date` of a bound timestamptz (immutable, so folded into a
        /// constant when planning, which estimates the rows), not a date parsed from text (stable, not folded).
        func utcDay(_ column: String) -> String { "(\(column) AT TIME ZONE 'UTC')::date" }
        let (revenue, mrr) = try { () throws -> ([String: Int64], [String: Int64]) in
            try pool.transaction { c in
                // The per-day groups (days × products × currencies) are few, but the planner cannot know that from
                // a computed day: enough memory keeps its grouping in a hash rather than a sort spilled to disk.
                _ = try c.execute("SET LOCAL work_mem = '32MB'")
                var weights: [String: Int] = [:]
                for row in try c.query("""
                    SELECT product_id, cardinality(entitlements)::int8 AS n FROM products WHERE project_id = \(projectId)
                    """) {
                    weights[try row.decode("product_id", as: String.self)] = try row.decode("n", as: Int.self)
                }
                func weight(_ row: Row, _ column: String) throws -> Int {
                    let product = try row.decode("product_id", as: String.self)
                    return (weights[product] ?? 0) &* (try row.decode(column, as: Int.self))
                }
                // Active at the range's start: intervals begun before it and not ended by it. Those lasting at most
                // `shortSpan` began within `shortSpan` before it (found by start day, a few weeks of rows rather than
                // every row ending after it); the longer and endless ones are few (a partial index by end).
                let shortFrom = lo.addingTimeInterval(-Self.shortSpan)
                var subs = 0
                var ents = 0
                for row in try c.query("""
                    SELECT product_id, count(*) FILTER (WHERE expires_date IS NOT NULL) AS subs, count(*) AS n
                    FROM (SELECT t.product_id, t.expires_date FROM transactions t
                          WHERE t.project_id = \(projectId)
                            AND \(unsafeSQL: utcDay("t.purchase_date")) >= (\(shortFrom) AT TIME ZONE 'UTC')::date
                            AND \(unsafeSQL: utcDay("t.purchase_date")) <= (\(lo) AT TIME ZONE 'UTC')::date
                            AND t.purchase_date > \(shortFrom) AND t.purchase_date < \(lo) AND \(unsafeSQL: Self.end) > \(lo)
                            AND \(unsafeSQL: Self.end) - t.purchase_date <= interval '32 days'
                            AND t.type <> 'Consumable' AND (\(env)::text IS NULL OR t.environment = \(env)::text)
                          UNION ALL
                          SELECT t.product_id, t.expires_date FROM transactions t
                          WHERE t.project_id = \(projectId) AND \(unsafeSQL: Self.end) > \(lo) AND t.purchase_date < \(lo)
                            AND \(unsafeSQL: Self.end) - t.purchase_date > interval '32 days'
                            AND t.type <> 'Consumable' AND (\(env)::text IS NULL OR t.environment = \(env)::text)
                          UNION ALL
                          SELECT t.product_id, t.expires_date FROM transactions t
                          WHERE t.project_id = \(projectId) AND \(unsafeSQL: Self.end) IS NULL AND t.purchase_date < \(lo)
                            AND t.type <> 'Consumable' AND (\(env)::text IS NULL OR t.environment = \(env)::text)) x
                    GROUP BY product_id
                    """) {
                    subs &+= try row.decode("subs", as: Int.self)
                    ents &+= try weight(row, "n")
                }
                var deltaSubs = [Int](repeating: 0, count: dayCount)
                var deltaEnts = [Int](repeating: 0, count: dayCount)
                var revenue: [String: Int64] = [:]

                // Starts by day: active deltas, new purchases, renewals and revenue in one scan.
                for row in try c.query("""
                    SELECT \(unsafeSQL: day("t.purchase_date"))(\(lo) AT TIME ZONE 'UTC')::date)::int8 AS d, t.product_id, t.currency,
                           count(*) FILTER (WHERE t.type <> 'Consumable' AND t.expires_date IS NOT NULL) AS subs,
                           count(*) FILTER (WHERE t.type <> 'Consumable') AS n,
                           count(*) FILTER (WHERE NOT t.is_renewal) AS new_purchases,
                           count(*) FILTER (WHERE t.is_renewal) AS renewals,
                           sum(t.price_milli)::int8 AS milli
                    FROM transactions t
                    WHERE t.project_id = \(projectId)
                      AND \(unsafeSQL: utcDay("t.purchase_date")) >= (\(lo) AT TIME ZONE 'UTC')::date
                      AND \(unsafeSQL: utcDay("t.purchase_date")) <= (\(hi) AT TIME ZONE 'UTC')::date
                      AND t.purchase_date >= \(lo) AND t.purchase_date < \(hi)
                      AND (\(env)::text IS NULL OR t.environment = \(env)::text)
                    GROUP BY \(unsafeSQL: utcDay("t.purchase_date")), t.product_id, t.currency
                    """) {
                    guard let i = try index(row) else { continue }
                    deltaSubs[i] &+= try row.decode("subs", as: Int.self)
                    deltaEnts[i] &+= try weight(row, "n")
                    days[i].newPurchases &+= try row.decode("new_purchases", as: Int.self)
                    days[i].renewals &+= try row.decode("renewals", as: Int.self)
                    if let currency = try row.decode("currency", as: String?.self),
                       let milli = try row.decode("milli", as: Int64?.self) {
                        days[i].revenue[currency, default: 0] &+= milli
                        revenue[currency, default: 0] &+= milli
                    }
                }
                // Ends by day (only those already past: today's later expiries have not happened).
                for row in try c.query("""
                    SELECT \(unsafeSQL: day(Self.end))(\(lo) AT TIME ZONE 'UTC')::date)::int8 AS d, t.product_id,
                           count(*) FILTER (WHERE t.expires_date IS NOT NULL) AS subs, count(*) AS n
                    FROM transactions t
                    WHERE t.project_id = \(projectId)
                      AND \(unsafeSQL: utcDay(Self.end)) >= (\(lo) AT TIME ZONE 'UTC')::date
                      AND \(unsafeSQL: utcDay(Self.end)) <= (\(hi) AT TIME ZONE 'UTC')::date
                      AND \(unsafeSQL: Self.end) > \(lo) AND \(unsafeSQL: Self.end) < \(hi) AND \(unsafeSQL: Self.end) <= \(now)
                      AND t.type <> 'Consumable'
                      AND (\(env)::text IS NULL OR t.environment = \(env)::text)
                    GROUP BY \(unsafeSQL: utcDay(Self.end)), t.product_id
                    """) {
                    guard let i = try index(row) else { continue }
                    deltaSubs[i] &-= try row.decode("subs", as: Int.self)
                    deltaEnts[i] &-= try weight(row, "n")
                }
                for i in days.indices {
                    subs &+= deltaSubs[i]
                    ents &+= deltaEnts[i]
                    days[i].activeSubscriptions = subs
                    days[i].activeEntitlements = ents
                }
                // Refunds by day.
                for row in try c.query("""
                    SELECT \(unsafeSQL: day("t.revocation_date"))(\(lo) AT TIME ZONE 'UTC')::date)::int8 AS d, count(*) AS n
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
                    SELECT \(unsafeSQL: day("p.expires_date"))(\(lo) AT TIME ZONE 'UTC')::date)::int8 AS d, count(*) AS n
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
                    SELECT \(unsafeSQL: day("t.expires_date"))(\(lo) AT TIME ZONE 'UTC')::date)::int8 AS d, count(*) AS n
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
                // MRR at the end of the range (or now): each active subscription's price over its period, per 30 days.
                let at = min(hi, now)
                let atShort = at.addingTimeInterval(-Self.shortSpan)
                var mrr: [String: Int64] = [:]
                // Active at `at`, split like "active at the range's start" (an interval without end has no period).
                for row in try c.query("""
                    SELECT currency, round(sum(price_milli::numeric * 2592000
                               / GREATEST(extract(epoch FROM expires_date - purchase_date), 86400)))::int8 AS milli
                    FROM (SELECT t.currency, t.price_milli, t.expires_date, t.purchase_date FROM transactions t
                          WHERE t.project_id = \(projectId)
                            AND \(unsafeSQL: utcDay("t.purchase_date")) >= (\(atShort) AT TIME ZONE 'UTC')::date
                            AND \(unsafeSQL: utcDay("t.purchase_date")) <= (\(at) AT TIME ZONE 'UTC')::date
                            AND t.purchase_date > \(atShort) AND t.purchase_date <= \(at) AND \(unsafeSQL: Self.end) > \(at)
                            AND \(unsafeSQL: Self.end) - t.purchase_date <= interval '32 days'
                            AND t.expires_date IS NOT NULL AND t.currency IS NOT NULL AND t.price_milli IS NOT NULL
                            AND (\(env)::text IS NULL OR t.environment = \(env)::text)
                          UNION ALL
                          SELECT t.currency, t.price_milli, t.expires_date, t.purchase_date FROM transactions t
                          WHERE t.project_id = \(projectId) AND \(unsafeSQL: Self.end) > \(at) AND t.purchase_date <= \(at)
                            AND \(unsafeSQL: Self.end) - t.purchase_date > interval '32 days'
                            AND t.expires_date IS NOT NULL AND t.currency IS NOT NULL AND t.price_milli IS NOT NULL
                            AND (\(env)::text IS NULL OR t.environment = \(env)::text)) x
                    GROUP BY 1
                    """) {
                    mrr[try row.decode("currency", as: String.self)] = try row.decode("milli", as: Int64.self)
                }
                return (revenue, mrr)
            }
        }()
        return OverviewMetrics(days: days, revenue: revenue, mrr: mrr)
    }
}
