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

    /// `rd`: the range's rows of the daily roll-up `revenue_days` (schema/0072) under the filters.
    static let days = """
        rd AS NOT MATERIALIZED (SELECT d.* FROM revenue_days d, q
            WHERE d.project_id = q.project AND d.day >= (q.lo AT TIME ZONE 'UTC')::date
              AND d.day < (q.hi AT TIME ZONE 'UTC')::date AND (q.env IS NULL OR d.environment = q.env)
              AND (q.product IS NULL OR d.product_id = q.product)
              AND (q.country IS NULL OR d.storefront = q.country))
        """

    /// Converts `e`'s amounts (`e`: i, currency, day, a0…) at each one's day's rate (`bouncer_money_rate`, asked once
    /// per currency and day), each rounded once (`bouncer_money_convert`); amounts without a rate stay in their
    /// currency, apart. Equal amounts of a day convert equally, so each distinct one is converted once and counted
    /// (`n`). `columns`: each output column as a sum of signed amounts (`[(0, 1)]`: + a0; `[(1, 1), (3, -1)]`:
    /// a1 − a3), or nil for a count `a<n>` summed as is.
    /// `counted`: `e` already carries each row's count `n`.
    static func converted(_ columns: [(amounts: [(Int, Int)], count: Int?)], counted: Bool = false) -> String {
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
        let grouped = counted ? "SELECT e.i, e.currency, e.day, \(amounts), e.n FROM e"
            : "SELECT e.i, e.currency, e.day, \(amounts), count(*) AS n FROM e GROUP BY e.i, e.currency, e.day, \(amounts)"
        return """
            g AS (\(grouped)),
            r AS MATERIALIZED (SELECT d.currency, d.day, bouncer_money_rate(d.currency, q.cur, d.day) AS rate
                FROM q, (SELECT DISTINCT g.currency, g.day FROM g) d),
            x AS (SELECT g.*, r.rate FROM g JOIN r ON r.currency = g.currency AND r.day = g.day)
            SELECT x.i, CASE WHEN x.rate IS NULL THEN x.currency END AS currency, \(select.joined(separator: ", "))
            FROM x GROUP BY 1, 2
            """
    }

    static let statements: [Chart: String] = [
        // From the daily roll-up (schema/0072): each row's amounts are equal, so each rule applies to its price
        // and counts n times; the project's Small Business Program lowers the commission to 15 % at read time, the
        // operator's tax rates (`tr`, per storefront and day of sale) come off before it. A refund gives back its
        // sale's tax, at the rate of the sale's day, which the roll-up's refund rows (by refund day) do not keep:
        // with tax rates configured, refunds come from the range's refunded transactions (`f`, their index) instead.
        .revenue: """
            \(days),
            \(taxRates("tr", of: "SELECT DISTINCT rd.storefront AS sf, rd.day FROM rd WHERE rd.kind = 0")),
            p AS NOT MATERIALIZED (SELECT rd.*, bouncer_money_proceeds(rd.price_milli,
                    LEAST(rd.tier, bouncer_money_commission(q.sbp, false, 0)), COALESCE(tr.tax, 0)) AS proceeds
                FROM q, rd LEFT JOIN tr ON rd.kind = 0 AND tr.sf = rd.storefront AND tr.day = rd.day),
            f AS (SELECT (t.refund_date AT TIME ZONE 'UTC')::date AS day, t.currency, t.price_milli,
                    t.refund_milli_percent, bouncer_money_proceeds(t.price_milli, bouncer_money_commission(q.sbp,
                        t.type = 'Auto-Renewable Subscription', t.paid_days_before),
                        bouncer_money_tax_rate(t.storefront, (t.purchase_date AT TIME ZONE 'UTC')::date)) AS proceeds
                FROM q, t WHERE q.taxed AND t.refund_date >= q.lo AND t.refund_date < q.hi AND t.price_milli > 0
                  AND t.refund_milli_percent > 0),
            e AS (SELECT width_bucket(p.day::timestamp AT TIME ZONE 'UTC', q.bounds) - 1 AS i, p.currency, p.day,
                    p.price_milli AS a0, p.proceeds AS a1, 0::int8 AS a2, 0::int8 AS a3, p.n
                FROM q, p WHERE p.kind = 0
                UNION ALL
                SELECT width_bucket(p.day::timestamp AT TIME ZONE 'UTC', q.bounds) - 1, p.currency, p.day, 0, 0,
                    bouncer_money_share(p.price_milli, p.refund_milli_percent),
                    bouncer_money_share(p.proceeds, p.refund_milli_percent), p.n
                FROM q, p WHERE p.kind = 1 AND NOT q.taxed
                UNION ALL
                SELECT width_bucket(f.day::timestamp AT TIME ZONE 'UTC', q.bounds) - 1, f.currency, f.day, 0, 0,
                    bouncer_money_share(f.price_milli, f.refund_milli_percent),
                    bouncer_money_share(f.proceeds, f.refund_milli_percent), 1::int8
                FROM q, f),
            \(converted([([(0, 1)], nil), ([(1, 1)], nil), ([(2, 1)], nil), ([(1, 1), (3, -1)], nil)], counted: true))
            """,
        // A trial's conversion is its row's `converted` (schema/0077, set by the roll-up): the range's trials from
        // their partial index.
        .trialConversion: """
            s AS (SELECT width_bucket(t.purchase_date, q.bounds) - 1 AS i, count(*) AS n,
                    count(*) FILTER (WHERE t.converted) AS c
                FROM q, t WHERE t.trial AND t.purchase_date >= q.lo AND t.purchase_date < q.hi GROUP BY 1)
            SELECT b.i, NULL::text AS currency, COALESCE(s.n, 0)::int8 AS m0, COALESCE(s.c, 0)::int8 AS m1
            FROM b LEFT JOIN s ON s.i = b.i
            """,
        .refundRate: """
            \(days),
            s AS (SELECT width_bucket(rd.day::timestamp AT TIME ZONE 'UTC', q.bounds) - 1 AS i, sum(rd.n) AS n,
                    sum(rd.refunded) AS refunded
                FROM q, rd WHERE rd.kind = 0 GROUP BY 1)
            SELECT b.i, NULL::text AS currency, COALESCE(s.n, 0)::int8 AS m0, COALESCE(s.refunded, 0)::int8 AS m1
            FROM b LEFT JOIN s ON s.i = b.i
            """,
    ]
}
