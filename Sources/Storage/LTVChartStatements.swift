import Domain

/// `realized_ltv` from the deriver's roll-ups (schema/0086), after `PostgresChartStore.chart`'s common CTEs: the same
/// numbers as the statement in CohortChartStatements.swift, which answers under a product or country filter (a
/// customer's purchases join several products and storefronts). A cohort's customers are an index range of their
/// first payments (`revenue_ltv_customers`); their amounts, rows of equal amounts per cohort day, day and price
/// (`revenue_ltv_days`, refunds once they have happened), each rule applied to a row and counted n times, each row
/// converted at its currency's rate on its day: the rates of the rows' currencies over their days computed at once
/// (`bouncer_money_rates`, `bouncer_money_rate`'s rule set-based: 3,294 plpgsql calls, ~250 ms, for 366 days on a
/// million), hashed by currency and day (grouped, so the planner knows each key once: over a CTE it sorted the 108k
/// rows to merge them) and summed per period without grouping equal amounts first (a row's n × its converted amount
/// is the group's sum n × the same amount; the groups were nearly as many as the rows); the
/// customers with amounts without a rate, per currency, the purchases of the range's cohorts in a currency that lacks
/// one (`revenue_ltv_purchases`) with a sale or a refund on such a day (their `revenue_transactions` rows, by purchase:
/// the roll-up keeps no days, so a renewal writes no purchase row; a probe per purchase, LIMIT 1 in a lateral: as an
/// EXISTS the plan hashed the project's whole `revenue_transactions`, ~0.9 s of 1.5 for 366 days on a million).
extension PostgresChartStore {
    static let ltvStatements: [Chart: String] = [
        .realizedLTV: """
            ld AS MATERIALIZED (SELECT width_bucket(d.cohort_day::timestamp AT TIME ZONE 'UTC', q.bounds) - 1 AS i,
                    d.currency, d.day, d.n,
                    CASE WHEN d.kind = 0 THEN p.a ELSE - bouncer_money_share(p.a, d.refund_milli_percent) END AS a
                FROM q, revenue_ltv_days d, LATERAL (SELECT bouncer_money_proceeds(d.price_milli,
                    LEAST(d.tier, bouncer_money_commission(q.sbp, false, 0))) AS a) p
                WHERE d.project_id = q.project AND d.cohort_day >= (q.lo AT TIME ZONE 'UTC')::date
                  AND d.cohort_day < (q.hi AT TIME ZONE 'UTC')::date AND (q.env IS NULL OR d.environment = q.env)
                  AND (d.kind = 0 OR d.refund_at <= q.now)),
            r AS MATERIALIZED (SELECT m.currency, m.day, m.rate
                FROM q, (SELECT ARRAY(SELECT DISTINCT ld.currency FROM ld) AS c, min(ld.day) AS lo, max(ld.day) AS hi
                    FROM ld) s, bouncer_money_rates(s.c, q.cur, s.lo, s.hi) m),
            x AS MATERIALIZED (SELECT ld.i, ld.currency, r.rate IS NULL AS un,
                    sum(ld.n * CASE WHEN r.rate IS NULL THEN ld.a ELSE bouncer_money_convert(ld.a, r.rate) END) AS a
                FROM ld JOIN (SELECT r.currency, r.day, min(r.rate) AS rate FROM r GROUP BY 1, 2) r
                    ON r.currency = ld.currency AND r.day = ld.day
                GROUP BY 1, 2, 3),
            net AS (SELECT x.i, sum(x.a) AS a FROM x WHERE NOT x.un GROUP BY x.i),
            un AS (SELECT x.i, x.currency, x.a FROM x WHERE x.un),
            nd AS (SELECT r.currency, array_agg(r.day) AS days FROM r
                WHERE r.rate IS NULL AND EXISTS (SELECT 1 FROM ld WHERE ld.currency = r.currency AND ld.day = r.day)
                GROUP BY 1),
            nc AS (SELECT width_bucket(lp.cohort_day::timestamp AT TIME ZONE 'UTC', q.bounds) - 1 AS i, lp.currency,
                    count(DISTINCT lp.customer) AS n
                FROM q, nd JOIN revenue_ltv_purchases lp ON lp.currency = nd.currency
                CROSS JOIN LATERAL (SELECT 1 FROM revenue_transactions v
                    WHERE v.project_id = q.project AND v.original_transaction_id = lp.original_transaction_id
                      AND v.environment = lp.environment AND v.currency = lp.currency AND v.price_milli > 0
                      AND ((v.purchase_date AT TIME ZONE 'UTC')::date = ANY (nd.days)
                          OR (v.refund_milli_percent > 0 AND v.refund_date <= q.now
                              AND (v.refund_date AT TIME ZONE 'UTC')::date = ANY (nd.days)))
                    LIMIT 1) v
                WHERE lp.project_id = q.project AND lp.cohort_day >= (q.lo AT TIME ZONE 'UTC')::date
                  AND lp.cohort_day < (q.hi AT TIME ZONE 'UTC')::date AND (q.env IS NULL OR lp.environment = q.env)
                GROUP BY 1, 2),
            mc AS (SELECT width_bucket(c.first_at, q.bounds) - 1 AS i, count(*) AS n
                FROM q, revenue_ltv_customers c
                WHERE c.project_id = q.project AND c.first_at >= q.lo AND c.first_at < q.hi
                  AND (q.env IS NULL OR c.environment = q.env)
                GROUP BY 1)
            SELECT b.i, NULL::text AS currency, COALESCE(mc.n, 0)::int8 AS m0, COALESCE(net.a, 0)::int8 AS m1
            FROM b LEFT JOIN mc ON mc.i = b.i LEFT JOIN net ON net.i = b.i
            UNION ALL
            SELECT un.i, un.currency, COALESCE(nc.n, 0)::int8, un.a::int8 FROM un
            LEFT JOIN nc ON nc.i = un.i AND nc.currency = un.currency
            """,
    ]
}
