import Domain

/// `mrr_movement` at `interval=day` without a product or country filter, for the days that have ended from the
/// deriver's daily roll-ups: the moves kept per day (`revenue_movement_days`, schema/0087: new, expansion,
/// contraction and reactivation amounts, and the values moved into and out of by purchases whose span changes), the
/// churned ones per value being the moves into it less the moves out of it less its daily difference
/// (`revenue_value_days`, schema/0085: the purchases holding it at the day's midnight less at the one before); and,
/// for today's interval, which ends now, from the spans begun or ended since the last midnight
/// (ValueChartStatements.swift's `spanMovement`). A week's or a month's movement compares its own two instants, not
/// the sum of its days': those intervals read the spans (`valueStatements`). The same numbers: ChartsE2ETests holds
/// the paths equal.
extension PostgresChartStore {
    static let dailyStatements: [Chart: String] = [
        .mrrMovement: """
            \(spanMovement(after: "GREATEST(w.ts[1], date_trunc('day', q.now AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')")),
            dd AS MATERIALIZED (SELECT (q.lo AT TIME ZONE 'UTC')::date AS lo,
                    (LEAST(q.hi, q.now) AT TIME ZONE 'UTC')::date AS hi FROM q),
            md AS (SELECT m.day, m.currency, m.kind, m.amount_milli, m.n FROM q, dd, revenue_movement_days m
                WHERE m.project_id = q.project AND m.day > dd.lo AND m.day <= dd.hi
                  AND (q.env IS NULL OR m.environment = q.env)),
            ch AS (SELECT x.day, x.currency, x.v, sum(x.n) AS n
                FROM (SELECT md.day, md.currency, md.amount_milli AS v, CASE WHEN md.kind = 5 THEN md.n ELSE - md.n END AS n
                        FROM md WHERE md.kind >= 5
                    UNION ALL
                    SELECT r.day, r.currency, r.monthly_milli, - r.n FROM q, dd, revenue_value_days r
                    WHERE r.project_id = q.project AND r.day > dd.lo AND r.day <= dd.hi
                      AND (q.env IS NULL OR r.environment = q.env)) x
                WHERE x.v > 0 GROUP BY 1, 2, 3 HAVING sum(x.n) <> 0),
            e AS (SELECT ev.*, 1::int8 AS n FROM ev
                UNION ALL
                SELECT (md.day - 1 - dd.lo)::int8, md.currency, md.day, \((0...4).map {
                        "CASE WHEN md.kind = \($0) THEN md.amount_milli ELSE 0 END" }.joined(separator: ", ")), md.n
                FROM dd, md WHERE md.kind < 5
                UNION ALL
                SELECT (ch.day - 1 - dd.lo)::int8, ch.currency, ch.day, 0, 0, 0, ch.v, 0, ch.n FROM dd, ch),
            \(converted([([(0, 1)], nil), ([(1, 1)], nil), ([(2, 1)], nil), ([(3, 1)], nil), ([(4, 1)], nil)], counted: true))
            """,
    ]
}
