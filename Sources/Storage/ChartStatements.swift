import Domain

/// Each chart's statement after `PostgresChartStore.chart`'s common CTEs (`q`: the query and the project's
/// settings, `bounds` the intervals' boundaries for `width_bucket`: `width_bucket(x, q.bounds) - 1` is the interval
/// of an instant in `[lo, hi)`; `b`: the intervals `i` with `lo`, `hi` and the instants `at0`, `at1` (their start and
/// end, at most now);
/// `t`: the project's `revenue_transactions` under the filters). Each answers rows `(i, currency, m0…)`: `currency`
/// NULL for the reporting currency, else amounts of that currency that had no rate. README "Charts" defines each.
extension PostgresChartStore {
    /// A paid subscription period: the transactions MRR and the active counts hold.
    static let paid = """
        t.type = 'Auto-Renewable Subscription' AND NOT t.trial AND t.price_milli > 0 AND t.expires_date IS NOT NULL
        """

    /// Active at the instant `at`: begun by it, not yet expired nor revoked (bounded: begun within 400 days).
    static func active(_ at: String) -> String {
        """
        t.purchase_date <= \(at) AND t.purchase_date > \(at) - interval '400 days'
        AND \(at) < LEAST(t.expires_date, COALESCE(t.revocation_date, 'infinity'::timestamptz))
        """
    }

    /// Converts `e`'s amounts (`e`: i, currency, day, a0…) at each one's day's rate (`bouncer_money_rate`, asked once
    /// per currency and day), each rounded once (`bouncer_money_convert`); amounts without a rate stay in their
    /// currency, apart. Equal amounts of a day convert equally, so each distinct one is converted once and counted
    /// (`n`). `columns`: each output column as a sum of signed amounts (`[(0, 1)]`: + a0; `[(1, 1), (3, -1)]`:
    /// a1 − a3), or nil for a count `a<n>` summed as is.
    static func converted(_ columns: [(amounts: [(Int, Int)], count: Int?)]) -> String {
        func money(_ a: Int) -> String {
            "x.n * CASE WHEN x.rate IS NULL THEN x.a\(a) ELSE bouncer_money_convert(x.a\(a), x.rate) END"
        }
        let used = Set(columns.flatMap { $0.amounts.map(\.0) + ($0.count.map { [$0] } ?? []) }).sorted()
        let select = columns.enumerated().map { m, column -> String in
            if let count = column.count { return "sum(x.n * x.a\(count))::int8 AS m\(m)" }
            let terms = column.amounts.map { a, sign in (sign < 0 ? "- " : "+ ") + "sum(\(money(a)))" }
            return "(0 " + terms.joined(separator: " ") + ")::int8 AS m\(m)"
        }
        let amounts = used.map { "e.a\($0)" }.joined(separator: ", ")
        return """
            g AS (SELECT e.i, e.currency, e.day, \(amounts), count(*) AS n FROM e
                GROUP BY e.i, e.currency, e.day, \(amounts)),
            r AS MATERIALIZED (SELECT d.currency, d.day, bouncer_money_rate(d.currency, q.cur, d.day) AS rate
                FROM q, (SELECT DISTINCT g.currency, g.day FROM g) d),
            x AS (SELECT g.*, r.rate FROM g JOIN r ON r.currency = g.currency AND r.day = g.day)
            SELECT x.i, CASE WHEN x.rate IS NULL THEN x.currency END AS currency, \(select.joined(separator: ", "))
            FROM x GROUP BY 1, 2
            """
    }

    /// Each purchase's latest paid period active at `at` (b's instant), with its monthly price.
    static func monthly(_ at: String) -> String {
        """
        SELECT DISTINCT ON (b.i, t.original_transaction_id) b.i, t.original_transaction_id AS o, t.currency,
            bouncer_money_monthly(t.price_milli, t.purchase_date, t.expires_date) AS v
        FROM b, t WHERE \(paid) AND \(active("b." + at))
        ORDER BY b.i, t.original_transaction_id, t.purchase_date DESC
        """
    }

    static let statements: [Chart: String] = [
        .revenue: """
            p AS NOT MATERIALIZED (SELECT t.*, bouncer_money_proceeds(t.price_milli, bouncer_money_commission(q.sbp,
                    t.type = 'Auto-Renewable Subscription', t.paid_days_before)) AS proceeds
                FROM q, t WHERE t.price_milli > 0),
            e AS (SELECT width_bucket(p.purchase_date, q.bounds) - 1 AS i, p.currency,
                    (p.purchase_date AT TIME ZONE 'UTC')::date AS day, p.price_milli AS a0, p.proceeds AS a1,
                    0::int8 AS a2, 0::int8 AS a3
                FROM q, p WHERE p.purchase_date >= q.lo AND p.purchase_date < q.hi
                UNION ALL
                SELECT width_bucket(p.refund_date, q.bounds) - 1, p.currency, (p.refund_date AT TIME ZONE 'UTC')::date,
                    0, 0, bouncer_money_share(p.price_milli, p.refund_milli_percent),
                    bouncer_money_share(p.proceeds, p.refund_milli_percent)
                FROM q, p WHERE p.refund_date >= q.lo AND p.refund_date < q.hi AND p.refund_milli_percent > 0),
            \(converted([([(0, 1)], nil), ([(1, 1)], nil), ([(2, 1)], nil), ([(1, 1), (3, -1)], nil)]))
            """,
        .mrr: """
            e AS (SELECT s.i, s.currency, (b.at1 AT TIME ZONE 'UTC')::date AS day, s.v AS a0, 1::int8 AS a1
                FROM (\(monthly("at1"))) s JOIN b ON b.i = s.i),
            \(converted([([(0, 1)], nil), ([], 1)]))
            """,
        .mrrMovement: """
            s0 AS (\(monthly("at0"))),
            s1 AS (\(monthly("at1"))),
            m AS (SELECT i, o, COALESCE(s1.currency, s0.currency) AS currency, COALESCE(s0.v, 0) AS v0,
                    COALESCE(s1.v, 0) AS v1
                FROM s0 FULL JOIN s1 USING (i, o)),
            e AS (SELECT m.i, m.currency, (b.at1 AT TIME ZONE 'UTC')::date AS day,
                    CASE WHEN m.v0 = 0 AND m.v1 > 0 AND NOT y.before THEN m.v1 ELSE 0 END AS a0,
                    CASE WHEN m.v0 > 0 AND m.v1 > m.v0 THEN m.v1 - m.v0 ELSE 0 END AS a1,
                    CASE WHEN m.v0 > 0 AND m.v1 > 0 AND m.v1 < m.v0 THEN m.v0 - m.v1 ELSE 0 END AS a2,
                    CASE WHEN m.v0 > 0 AND m.v1 = 0 THEN m.v0 ELSE 0 END AS a3,
                    CASE WHEN m.v0 = 0 AND m.v1 > 0 AND y.before THEN m.v1 ELSE 0 END AS a4
                FROM q, m JOIN b ON b.i = m.i
                CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM revenue_transactions w
                    WHERE w.project_id = q.project AND w.original_transaction_id = m.o AND NOT w.trial
                      AND w.price_milli > 0 AND w.purchase_date < b.at0) AS before) y),
            \(converted([([(0, 1)], nil), ([(1, 1)], nil), ([(2, 1)], nil), ([(3, 1)], nil), ([(4, 1)], nil)]))
            """,
        .activeSubscriptions: """
            z AS (SELECT 1)
            SELECT b.i, NULL::text AS currency, count(DISTINCT t.original_transaction_id)::int8 AS m0
            FROM b LEFT JOIN t ON \(paid) AND \(active("b.at1")) GROUP BY b.i
            """,
        .activeTrials: """
            z AS (SELECT 1)
            SELECT b.i, NULL::text AS currency, count(DISTINCT t.original_transaction_id)::int8 AS m0
            FROM b LEFT JOIN t ON t.trial AND t.expires_date IS NOT NULL AND \(active("b.at1")) GROUP BY b.i
            """,
        .trialConversion: """
            z AS (SELECT 1)
            SELECT b.i, NULL::text AS currency, count(t.transaction_id)::int8 AS m0,
                count(t.transaction_id) FILTER (WHERE EXISTS (SELECT 1 FROM revenue_transactions w
                    WHERE w.project_id = t.project_id AND w.environment = t.environment
                      AND w.original_transaction_id = t.original_transaction_id AND NOT w.trial AND w.price_milli > 0
                      AND w.purchase_date >= t.purchase_date))::int8 AS m1
            FROM b LEFT JOIN t ON t.trial AND t.purchase_date >= b.lo AND t.purchase_date < b.hi GROUP BY b.i
            """,
        .churn: """
            s0 AS (SELECT DISTINCT b.i, t.original_transaction_id AS o FROM b, t WHERE \(paid) AND \(active("b.at0"))),
            s1 AS (SELECT DISTINCT b.i, t.original_transaction_id AS o FROM b, t WHERE \(paid) AND \(active("b.at1")))
            SELECT b.i, NULL::text AS currency, count(s0.o)::int8 AS m0,
                count(s0.o) FILTER (WHERE NOT EXISTS (SELECT 1 FROM s1 WHERE s1.i = s0.i AND s1.o = s0.o))::int8 AS m1
            FROM b LEFT JOIN s0 ON s0.i = b.i GROUP BY b.i
            """,
        .refundRate: """
            z AS (SELECT 1)
            SELECT b.i, NULL::text AS currency, count(t.transaction_id)::int8 AS m0,
                count(t.transaction_id) FILTER (WHERE t.refund_milli_percent > 0)::int8 AS m1
            FROM b LEFT JOIN t ON t.price_milli > 0 AND t.purchase_date >= b.lo AND t.purchase_date < b.hi
            GROUP BY b.i
            """,
    ]
}
