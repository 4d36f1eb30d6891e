public import Domain
public import Foundation
import Postgres
import Primitives

/// The charts (issue 26), read from `revenue_transactions` (schema/0062: each transaction's money facts, derived from
/// the change log by the deriver, never in the receipt's transaction) with the money rules of
/// `schema/functions/bouncer_money_*.sql`, and `exchange_rates`. Every statement is bounded by the range: sales and
/// trials by purchase date, refunds by revocation date (their indexes), the periods behind states at instants by
/// their end (schema/0071; one sweep for all of a range's instants: SweepChartStatements.swift).
public final class PostgresChartStore: PostgresStore, @unchecked Sendable, ChartStore {
    /// The intervals of `[from, to)`: each clipped to the range, weeks from Monday, months from the 1st (UTC).
    static func buckets(from: Date, to: Date, interval: ChartInterval) -> [(lo: Int64, hi: Int64)] {
        let first = Int64((from.timeIntervalSince1970 / 86_400).rounded(.down))
        let end = Int64((to.timeIntervalSince1970 / 86_400).rounded(.down))
        var out: [(Int64, Int64)] = []
        var day = first
        while day < end {
            let next: Int64
            switch interval {
            case .day:
                next = day + 1
            case .week:
                // 1970-01-01 was a Thursday: Monday is (days + 3) mod 7 == 0.
                next = day + 7 - ((day + 3) % 7 + 7) % 7
            case .month:
                let c = GregorianCalendar.civil(daysSince1970: day)
                next = c.month == 12 ? GregorianCalendar.daysSince1970(year: c.year + 1, month: 1, day: 1)
                    : GregorianCalendar.daysSince1970(year: c.year, month: c.month + 1, day: 1)
            }
            out.append((day * 86_400, min(next, end) * 86_400))
            day = next
        }
        return out
    }

    public func chart(_ query: ChartQuery, now: Date) throws -> ChartResult {
        let buckets = Self.buckets(from: query.from, to: query.to, interval: query.interval)
        let width = query.chart.measures.count
        return try StorageErrors.mapping("chart") {
            try pool.transaction(isolation: .repeatableRead) { c in
                _ = try c.execute("SET LOCAL jit = off")
                // The sweeps sort a range's periods by purchase (~170k rows for 90 days of a million transactions).
                _ = try c.execute("SET LOCAL work_mem = '64MB'")
                let settings = try Self.settings(c, query.projectId)
                var fresh = now
                for row in try c.query("""
                    SELECT c.created_at FROM purchase_changes c WHERE c.project_id = \(query.projectId)
                    ORDER BY c.seq LIMIT 1
                    """) {
                    fresh = min(fresh, try row.decode("created_at", as: Date.self))
                }
                var points = buckets.map {
                    ChartPoint(date: Date(timeIntervalSince1970: Double($0.lo)), values: Array(repeating: 0, count: width))
                }
                // The runs of paid service, the spans of MRR and the customers of realized LTV join a purchase's
                // (a customer's) products and storefronts: unfiltered charts only. Realized LTV's roll-up keeps no
                // storefront, so with tax rates configured it reads the periods, which apply them.
                let daily = query.interval == .day ? Self.dailyStatements[query.chart] : nil
                let runs = query.productId == nil && query.country == nil
                    ? daily ?? Self.runStatements[query.chart] ?? Self.valueStatements[query.chart]
                        ?? (settings.taxRatesConfigured ? nil : Self.ltvStatements[query.chart]) : nil
                let statement = runs ?? Self.sweepStatements[query.chart] ?? Self.statements[query.chart]
                    ?? Self.cohortStatements[query.chart] ?? ""
                for row in try c.query("""
                    WITH q AS NOT MATERIALIZED (SELECT \(query.projectId)::uuid AS project,
                        \(query.environment?.rawValue)::text AS env, \(query.productId)::text AS product,
                        \(query.country)::text AS country, \(settings.reportingCurrency)::text AS cur,
                        \(settings.smallBusinessProgram)::boolean AS sbp, \(settings.taxRatesConfigured)::boolean AS taxed,
                        \(now)::timestamptz AS now,
                        to_timestamp(\(buckets.first?.lo ?? 0)::int8) AS lo, to_timestamp(\(buckets.last?.hi ?? 0)::int8) AS hi,
                        ARRAY(SELECT to_timestamp(x) FROM unnest(\(buckets.map(\.lo) + [buckets.last?.hi ?? 0])::int8[])
                            x ORDER BY x) AS bounds),
                    b AS MATERIALIZED (SELECT (u.n - 1)::int8 AS i, to_timestamp(u.lo) AS lo, to_timestamp(u.hi) AS hi,
                        LEAST(to_timestamp(u.lo), q.now) AS at0, LEAST(to_timestamp(u.hi), q.now) AS at1
                        FROM q, unnest(\(buckets.map(\.lo))::int8[], \(buckets.map(\.hi))::int8[]) WITH ORDINALITY u (lo, hi, n)),
                    t AS NOT MATERIALIZED (SELECT v.* FROM revenue_transactions v, q
                        WHERE v.project_id = q.project AND (q.env IS NULL OR v.environment = q.env)
                          AND (q.product IS NULL OR v.product_id = q.product)
                          AND (q.country IS NULL OR v.storefront = q.country)),
                    \(unsafeSQL: statement)
                    """) {
                    let i = try row.decode("i", as: Int.self)
                    guard points.indices.contains(i) else { continue }
                    var values: [Int64] = []
                    for m in 0..<width { values.append(try row.decode("m\(m)", as: Int64?.self) ?? 0) }
                    if let currency = try row.decode("currency", as: String?.self) {
                        points[i].unconverted[currency] = values
                    } else {
                        points[i].values = values
                    }
                }
                return ChartResult(settings: settings, points: points, freshAsOf: fresh)
            }
        }
    }

    /// The project's money settings, and whether the operator has configured tax rates (`taxRatesConfigured`).
    static func settings(_ c: Connection, _ projectId: UUID) throws -> RevenueSettings {
        var settings = RevenueSettings.standard
        for row in try c.query("""
            SELECT small_business_program, reporting_currency FROM revenue_settings WHERE project_id = \(projectId)
            """) {
            settings = RevenueSettings(smallBusinessProgram: try row.decode("small_business_program", as: Bool.self),
                                       reportingCurrency: try row.decode("reporting_currency", as: String.self))
        }
        // The operator's (a reference table under Citus): a statement of its own.
        for row in try c.query("SELECT EXISTS (SELECT 1 FROM tax_rates) AS taxed") {
            settings.taxRatesConfigured = try row.decode("taxed", as: Bool.self)
        }
        return settings
    }

    public func setSettings(_ settings: RevenueSettings, projectId: UUID) throws {
        try StorageErrors.mapping("revenue settings") {
            try pool.transaction { c in
                let before = try Self.settings(c, projectId)
                _ = try c.execute("""
                    INSERT INTO revenue_settings (project_id, small_business_program, reporting_currency)
                    VALUES (\(projectId), \(settings.smallBusinessProgram), \(settings.reportingCurrency))
                    ON CONFLICT (project_id) DO UPDATE SET small_business_program = EXCLUDED.small_business_program,
                        reporting_currency = EXCLUDED.reporting_currency
                    """)
                func fields(_ s: RevenueSettings) -> [(String, AuditValue)] {
                    [("small_business_program", .bool(s.smallBusinessProgram)),
                     ("reporting_currency", .string(s.reportingCurrency))]
                }
                try AuditRows.write(c, projectId: projectId, changes: AuditRows.diff(fields(before), fields(settings)))
            }
        }
    }

    public func storeRates(_ rates: [ExchangeRate]) throws -> Int {
        guard !rates.isEmpty else { return 0 }
        return try StorageErrors.mapping("exchange rates") {
            try pool.transaction { c in
                let stored = try c.execute("""
                    INSERT INTO exchange_rates (day, base, currency, rate)
                    SELECT (to_timestamp(u.day) AT TIME ZONE 'UTC')::date, u.base, u.currency, u.rate::numeric
                    FROM unnest(\(rates.map { Int64($0.day.timeIntervalSince1970) })::int8[],
                        \(rates.map(\.base))::text[], \(rates.map(\.currency))::text[],
                        \(rates.map(\.rate.text))::text[]) u (day, base, currency, rate)
                    ON CONFLICT (currency, day, base) DO UPDATE SET rate = EXCLUDED.rate
                    """)
                let days = Set(rates.map { RFC3339.day(secondsSince1970: $0.day.timeIntervalSince1970) }).sorted()
                let target = days.count == 1 ? days[0] : (days.first ?? "") + ".." + (days.last ?? "")
                try AuditRows.write(c, target: "exchange_rates:" + target, changes: [
                    AuditChange("days", .null, .list(days.map { .string($0) })),
                    AuditChange("bases", .null, .list(Set(rates.map(\.base)).sorted().map { .string($0) })),
                    AuditChange("currencies", .null, .list(Set(rates.map(\.currency)).sorted().map { .string($0) })),
                    AuditChange("rates", .null, .int(rates.count)),
                ])
                return stored
            }
        }
    }
}
