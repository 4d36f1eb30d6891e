import Domain

/// The cohort charts' statements (`subscription_retention`, `realized_ltv`), after `PostgresChartStore.chart`'s
/// common CTEs (`q`, `b`, `t`: ChartStatements.swift). A cohort is an interval of `b`: the subscriptions (retention)
/// or customers (LTV) whose first payment falls in it; what they did afterwards is followed up to now, past the
/// range's end. README "Charts" defines both.
extension PostgresChartStore {
    /// `paid` (ChartStatements.swift) for a transaction aliased `a`.
    static func paidPeriod(_ a: String) -> String {
        paid.replacingOccurrences(of: "t.", with: a + ".")
    }

    /// UTC calendar months after an instant (the same day of the month, clamped to its last day).
    static func monthsAfter(_ instant: String, _ months: String) -> String {
        "((\(instant) AT TIME ZONE 'UTC') + make_interval(months => \(months))) AT TIME ZONE 'UTC'"
    }

    /// The storefronts and days of `realized_ltv`'s sales, for their tax rates.
    private static let ltvTaxPairs = "SELECT DISTINCT COALESCE(t.storefront, '') AS sf, "
        + "(t.purchase_date AT TIME ZONE 'UTC')::date AS day FROM q, t WHERE t.price_milli > 0 AND t.purchase_date >= q.lo"

    /// The boundaries of months 0…12: 14 instants.
    private static let months = Chart.retentionMonths.upperBound + 1

    static let cohortStatements: [Chart: String] = [
        // Members: each purchase's first paid period (`paid`), by its purchase date. Candidates are the periods with
        // no paid service before them (paid_ms_before = 0; under a product or country filter, any: the filtered
        // purchase may begin later), checked against the purchase's earlier transactions. Month k of a member is
        // [first + k months, first + k + 1 months): reached once it has begun, retained when a paid period
        // overlaps it (up to its expiry or revocation, as the active counts).
        .subscriptionRetention: """
            m AS MATERIALIZED (SELECT b.i, t.environment AS env, t.original_transaction_id AS o,
                    t.purchase_date AS first, ARRAY(SELECT \(monthsAfter("t.purchase_date", "g.k"))
                        FROM generate_series(0, \(months)) g (k) ORDER BY g.k) AS lo
                FROM q, b, t WHERE \(paid) AND t.purchase_date >= b.lo AND t.purchase_date < b.hi
                  AND (t.paid_ms_before = 0 OR q.product IS NOT NULL OR q.country IS NOT NULL)
                  AND NOT EXISTS (SELECT 1 FROM t w WHERE w.environment = t.environment
                      AND w.original_transaction_id = t.original_transaction_id AND \(paidPeriod("w"))
                      AND (w.purchase_date, w.transaction_id) < (t.purchase_date, t.transaction_id))),
            y AS (SELECT DISTINCT m.i, m.env, m.o, g.k
                FROM q, m JOIN t ON t.environment = m.env AND t.original_transaction_id = m.o AND \(paid)
                    AND t.purchase_date >= m.first AND t.purchase_date < m.lo[\(months + 1)]
                CROSS JOIN LATERAL (SELECT LEAST(t.expires_date, COALESCE(t.revocation_date, 'infinity'::timestamptz))
                    AS ends) e
                CROSS JOIN LATERAL generate_series(width_bucket(t.purchase_date, m.lo) - 1,
                    LEAST(width_bucket(e.ends - interval '1 microsecond', m.lo), \(months)) - 1) g (k)
                WHERE e.ends > t.purchase_date AND m.lo[g.k + 1] <= q.now),
            mc AS (SELECT m.i, count(*) AS n, \(Chart.retentionMonths.map {
                    "count(*) FILTER (WHERE m.lo[\($0 + 1)] <= q.now) AS h\($0)" }.joined(separator: ", "))
                FROM q, m GROUP BY m.i),
            yc AS (SELECT y.i, \(Chart.retentionMonths.map { "count(*) FILTER (WHERE y.k = \($0)) AS r\($0)" }
                    .joined(separator: ", "))
                FROM y GROUP BY y.i)
            SELECT b.i, NULL::text AS currency, COALESCE(mc.n, 0)::int8 AS m0, \(Chart.retentionMonths.map {
                    "COALESCE(mc.h\($0), 0)::int8 AS m\(1 + 2 * $0), COALESCE(yc.r\($0), 0)::int8 AS m\(2 + 2 * $0)"
                }.joined(separator: ", "))
            FROM b LEFT JOIN mc ON mc.i = b.i LEFT JOIN yc ON yc.i = b.i
            """,
        // Customers: the user holding a purchase now (its latest binding not moved away; else the purchase is its own
        // customer), per environment. A customer's first payment is their earliest transaction with a price; their
        // net, every transaction's proceeds since (after its storefront's tax of its day, `tr`, once rates are
        // configured), less the refunded proceeds (by refund date), up to now, each amount at its own day's rate;
        // amounts without one apart, with the customers they came from.
        .realizedLTV: """
            o AS MATERIALIZED (SELECT t.environment, t.original_transaction_id AS o, COALESCE('u:' || (
                    SELECT s.user_id FROM subscriptions s WHERE s.project_id = q.project
                      AND s.environment = t.environment AND s.original_transaction_id = t.original_transaction_id
                      AND s.revoked_at IS NULL ORDER BY s.bound_at DESC, s.user_id LIMIT 1),
                    'p:' || t.original_transaction_id) AS cu
                FROM q, t WHERE t.price_milli > 0 AND t.purchase_date >= q.lo GROUP BY q.project, 1, 2),
            \(taxRates("tr", of: ltvTaxPairs)),
            p AS MATERIALIZED (SELECT t.*, o.cu, bouncer_money_proceeds(t.price_milli, bouncer_money_commission(q.sbp,
                    t.type = 'Auto-Renewable Subscription', t.paid_days_before), COALESCE(tr.tax, 0)) AS proceeds
                FROM q, t JOIN o ON o.environment = t.environment AND o.o = t.original_transaction_id
                LEFT JOIN tr ON tr.sf = COALESCE(t.storefront, '') AND tr.day = (t.purchase_date AT TIME ZONE 'UTC')::date
                WHERE t.price_milli > 0 AND t.purchase_date >= q.lo),
            f AS (SELECT p.environment, p.cu, min(p.purchase_date) AS first FROM p GROUP BY 1, 2),
            -- A customer who paid before the range is in an earlier cohort: a purchase of theirs (one they hold now,
            -- as above) with a transaction with a price before it.
            m AS MATERIALIZED (SELECT width_bucket(f.first, q.bounds) - 1 AS i, f.environment, f.cu FROM q, f
                WHERE f.first < q.hi
                  AND NOT (CASE WHEN f.cu LIKE 'p:%' THEN EXISTS (SELECT 1 FROM t w
                          WHERE w.environment = f.environment AND w.original_transaction_id = substr(f.cu, 3)
                            AND w.price_milli > 0 AND w.purchase_date < q.lo)
                      ELSE EXISTS (SELECT 1 FROM subscriptions s JOIN t w ON w.environment = s.environment
                              AND w.original_transaction_id = s.original_transaction_id
                          WHERE s.project_id = q.project AND s.user_id = substr(f.cu, 3)
                            AND s.environment = f.environment AND s.revoked_at IS NULL
                            AND w.price_milli > 0 AND w.purchase_date < q.lo
                            AND NOT EXISTS (SELECT 1 FROM subscriptions s2 WHERE s2.project_id = q.project
                                AND s2.environment = s.environment AND s2.original_transaction_id = s.original_transaction_id
                                AND s2.revoked_at IS NULL AND (s2.bound_at > s.bound_at
                                    OR (s2.bound_at = s.bound_at AND s2.user_id < s.user_id)))) END)),
            e AS (SELECT m.i, m.cu, p.currency, (p.purchase_date AT TIME ZONE 'UTC')::date AS day, p.proceeds AS a
                FROM m JOIN p ON p.environment = m.environment AND p.cu = m.cu
                UNION ALL
                SELECT m.i, m.cu, p.currency, (p.refund_date AT TIME ZONE 'UTC')::date,
                    - bouncer_money_share(p.proceeds, p.refund_milli_percent)
                FROM q, m JOIN p ON p.environment = m.environment AND p.cu = m.cu
                WHERE p.refund_milli_percent > 0 AND p.refund_date <= q.now),
            r AS MATERIALIZED (SELECT d.currency, d.day, bouncer_money_rate(d.currency, q.cur, d.day) AS rate
                FROM q, (SELECT DISTINCT e.currency, e.day FROM e) d),
            x AS MATERIALIZED (SELECT e.*, r.rate FROM e JOIN r ON r.currency = e.currency AND r.day = e.day),
            net AS (SELECT x.i, sum(bouncer_money_convert(x.a, x.rate)) AS a FROM x WHERE x.rate IS NOT NULL
                GROUP BY x.i),
            mc AS (SELECT m.i, count(*) AS n FROM m GROUP BY m.i)
            SELECT b.i, NULL::text AS currency, COALESCE(mc.n, 0)::int8 AS m0, COALESCE(net.a, 0)::int8 AS m1
            FROM b LEFT JOIN mc ON mc.i = b.i LEFT JOIN net ON net.i = b.i
            UNION ALL
            SELECT x.i, x.currency, count(DISTINCT x.cu)::int8, sum(x.a)::int8 FROM x WHERE x.rate IS NULL GROUP BY 1, 2
            """,
    ]
}
