public import Domain
public import Foundation
import Postgres
import Primitives

/// The operator's per-storefront tax rates (`tax_rates`, schema/0093; README "Money"), which the money rules apply
/// through `bouncer_money_tax_rate`.
extension PostgresChartStore: TaxRateStore {
    public func storeTaxRates(_ rates: [TaxRate]) throws -> Int {
        guard !rates.isEmpty else { return 0 }
        return try StorageErrors.mapping("tax rates") {
            try pool.transaction { c in
                let days = rates.map { Int64($0.day.timeIntervalSince1970) }
                let storefronts = rates.map(\.storefront)
                // What each (storefront, day) held before, for the audit entry.
                var before: [String: Int] = [:]
                for row in try c.query("""
                    SELECT u.storefront || ' ' || t.day::text AS k, t.milli_percent
                    FROM unnest(\(days)::int8[], \(storefronts)::text[]) u (day, storefront)
                    JOIN tax_rates t ON t.storefront = u.storefront
                        AND t.day = (to_timestamp(u.day) AT TIME ZONE 'UTC')::date
                    """) {
                    before[try row.decode("k", as: String.self)] = try row.decode("milli_percent", as: Int.self)
                }
                let stored = try c.execute("""
                    INSERT INTO tax_rates (storefront, day, milli_percent)
                    SELECT u.storefront, (to_timestamp(u.day) AT TIME ZONE 'UTC')::date, u.milli_percent
                    FROM unnest(\(days)::int8[], \(storefronts)::text[], \(rates.map { Int64($0.milliPercent) })::int8[])
                        u (day, storefront, milli_percent)
                    ON CONFLICT (storefront, day) DO UPDATE SET milli_percent = EXCLUDED.milli_percent
                    """)
                let changes = rates.sorted { ($0.storefront, $0.day) < ($1.storefront, $1.day) }.compactMap { rate in
                    let day = RFC3339.day(secondsSince1970: rate.day.timeIntervalSince1970)
                    let old = before[rate.storefront + " " + day].map { AuditValue.string(TaxRate.text(milliPercent: $0)) }
                    let new = AuditValue.string(TaxRate.text(milliPercent: rate.milliPercent))
                    return old == new ? nil : AuditChange(rate.storefront + " " + day, old ?? .null, new)
                }
                let named = Set(rates.map { RFC3339.day(secondsSince1970: $0.day.timeIntervalSince1970) }).sorted()
                let target = named.count == 1 ? named[0] : (named.first ?? "") + ".." + (named.last ?? "")
                try AuditRows.write(c, target: "tax_rates:" + target, changes: changes)
                return stored
            }
        }
    }

    public func taxRates(on day: Date?) throws -> [TaxRate] {
        try StorageErrors.mapping("tax rates") {
            try pool.withConnection { c in
                try c.query("""
                    SELECT t.storefront, extract(epoch FROM t.day)::int8 AS day, t.milli_percent FROM tax_rates t
                    WHERE \(day == nil)::boolean OR t.day = (SELECT max(l.day) FROM tax_rates l
                        WHERE l.storefront = t.storefront
                          AND l.day <= (to_timestamp(\(Int64(day?.timeIntervalSince1970 ?? 0))) AT TIME ZONE 'UTC')::date)
                    ORDER BY t.storefront, t.day
                    """).map { row in
                    TaxRate(day: Date(timeIntervalSince1970: Double(try row.decode("day", as: Int64.self))),
                            storefront: try row.decode("storefront", as: String.self),
                            milliPercent: try row.decode("milli_percent", as: Int.self))
                }
            }
        }
    }

    /// `name AS MATERIALIZED (sf, day, tax)`: the tax rate in milli-percent (`bouncer_money_tax_rate`) of each
    /// distinct storefront and day that `pairs` selects (`sf`, `day`), looked up once each, and only when the operator
    /// has configured rates (`q.taxed`): otherwise empty, every amount before tax (`COALESCE(tax, 0)` at the join).
    static func taxRates(_ name: String, of pairs: String) -> String {
        """
        \(name) AS MATERIALIZED (SELECT d.sf, d.day, bouncer_money_tax_rate(d.sf, d.day) AS tax
            FROM q, (\(pairs)) d WHERE q.taxed)
        """
    }
}
