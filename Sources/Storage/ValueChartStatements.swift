import Domain

/// `mrr`, `mrr_movement` and `subscription_retention` without a product or country filter, from the deriver's spans of MRR (schema/0085:
/// `revenue_values`, each purchase's monthly price and currency over time, and `revenue_value_days`, how many spans of
/// each value begin minus end by each midnight) instead of the sweep over the range's periods
/// (SweepChartStatements.swift, which the filtered charts still read: a span's value is its purchase's latest period,
/// whatever its product or storefront). The instants are the sweep's (RunChartStatements.swift's `instants`); the
/// definitions (README "Charts") are the same and ChartsE2ETests holds both paths equal.
extension PostgresChartStore {
    static let valueStatements: [Chart: String] = [
        // The purchases holding each value at an instant: the days' counts up to its midnight (each day's row at the
        // first instant on or after it), plus, for an instant past its midnight (now, and every later instant, which
        // is now too), the spans begun and ended since.
        .mrr: """
            \(instants),
            nw AS (SELECT min(kd.k) AS k, min(kd.at) AS at, min(kd.midnight) AS midnight FROM kd
                WHERE kd.at > kd.midnight),
            dk AS (SELECT x.currency, x.v, x.k, sum(x.d) AS d
                FROM (SELECT width_bucket(r.day - 1, ARRAY(SELECT kd.d FROM kd ORDER BY kd.k)) AS k, r.currency,
                        r.monthly_milli AS v, r.n AS d
                    FROM q, revenue_value_days r WHERE r.project_id = q.project
                      AND (q.env IS NULL OR r.environment = q.env) AND r.day <= (SELECT max(kd.d) FROM kd)
                    UNION ALL
                    SELECT nw.k, s.currency, s.monthly_milli, 1 FROM q, nw, revenue_values s
                    WHERE s.project_id = q.project AND (q.env IS NULL OR s.environment = q.env)
                      AND s.starts_at > nw.midnight AND s.starts_at <= nw.at
                    UNION ALL
                    SELECT nw.k, s.currency, s.monthly_milli, -1 FROM q, nw, revenue_values s
                    WHERE s.project_id = q.project AND (q.env IS NULL OR s.environment = q.env)
                      AND s.ends_at > nw.midnight AND s.ends_at <= nw.at) x
                GROUP BY 1, 2, 3),
            \(held)
            """,
        .mrrMovement: """
            \(spanMovement(after: "w.ts[1]")),
            e AS (SELECT ev.*, 1::int8 AS n FROM ev),
            \(converted([([(0, 1)], nil), ([(1, 1)], nil), ([(2, 1)], nil), ([(3, 1)], nil), ([(4, 1)], nil)], counted: true))
            """,
        // Members from the deriver's rows (revenue_cohorts, schema/0085: each purchase's first paid period and the
        // months its paid service overlaps) by an index range of first payments. Month k reached once it has begun:
        // `reached` months, from the calendar months between the first payment and now (the last of them when its
        // day and time have come).
        .subscriptionRetention: """
            m AS (SELECT width_bucket(c.first_at, q.bounds) - 1 AS i, c.months, LEAST(\(Chart.retentionMonths.upperBound + 1),
                    GREATEST(0, y.k + CASE WHEN x.a + make_interval(months => y.k) <= x.now THEN 1 ELSE 0 END)) AS reached
                FROM q, revenue_cohorts c
                CROSS JOIN LATERAL (SELECT c.first_at AT TIME ZONE 'UTC' AS a, q.now AT TIME ZONE 'UTC' AS now) x
                CROSS JOIN LATERAL (SELECT ((extract(year FROM x.now) - extract(year FROM x.a)) * 12
                    + extract(month FROM x.now) - extract(month FROM x.a))::int AS k) y
                WHERE c.project_id = q.project AND (q.env IS NULL OR c.environment = q.env)
                  AND c.first_at >= q.lo AND c.first_at < q.hi),
            -- Members alike counted once: the counts per month then add up a few groups per interval.
            g AS (SELECT m.i, m.reached, m.months, count(*) AS n FROM m GROUP BY 1, 2, 3),
            mc AS (SELECT g.i, sum(g.n) AS n, \(Chart.retentionMonths.map {
                    "sum(g.n) FILTER (WHERE g.reached > \($0)) AS h\($0), "
                    + "sum(g.n) FILTER (WHERE g.reached > \($0) AND g.months & \(1 << $0) <> 0) AS r\($0)"
                }.joined(separator: ", "))
                FROM g GROUP BY g.i)
            SELECT b.i, NULL::text AS currency, COALESCE(mc.n, 0)::int8 AS m0, \(Chart.retentionMonths.map {
                    "COALESCE(mc.h\($0), 0)::int8 AS m\(1 + 2 * $0), COALESCE(mc.r\($0), 0)::int8 AS m\(2 + 2 * $0)"
                }.joined(separator: ", "))
            FROM b LEFT JOIN mc ON mc.i = b.i
            """,
    ]

    /// `mrr_movement`'s moves read from the spans begun or ended after `after` and by the range's last instant
    /// (`w`: the intervals' instants, at most now; `ev`: i, currency, day, a0…a4 per moving purchase and interval).
    /// A purchase moves in interval i when a span of it begins or ends in (T_i, T_{i+1}]: from the value of the
    /// span that ends there and covered T_i (else 0) to the value of the one that begins there and covers T_{i+1}
    /// (else 0), in the latter's currency (else the former's). A new value after none is a reactivation when the
    /// purchase had paid before T_i (its first payment, or a span covering T_i).
    static func spanMovement(after: String) -> String {
        """
        w AS MATERIALIZED (SELECT ARRAY(SELECT LEAST(x, q.now) FROM unnest(q.bounds) x ORDER BY x) AS ts,
                cardinality(q.bounds) - 1 AS n
            FROM q),
        bd AS (SELECT true AS begun, width_bucket(s.starts_at - interval '1 microsecond', w.ts) - 1 AS i, s.*
            FROM q, w, revenue_values s WHERE s.project_id = q.project AND (q.env IS NULL OR s.environment = q.env)
              AND s.starts_at > \(after) AND s.starts_at <= w.ts[w.n + 1]
            UNION ALL
            SELECT false, width_bucket(s.ends_at - interval '1 microsecond', w.ts) - 1, s.*
            FROM q, w, revenue_values s WHERE s.project_id = q.project AND (q.env IS NULL OR s.environment = q.env)
              AND s.ends_at > \(after) AND s.ends_at <= w.ts[w.n + 1]),
        mv AS (SELECT bd.i, max(bd.monthly_milli) FILTER (WHERE NOT bd.begun AND bd.starts_at <= w.ts[bd.i + 1]) AS v0,
                max(bd.currency) FILTER (WHERE NOT bd.begun AND bd.starts_at <= w.ts[bd.i + 1]) AS c0,
                max(bd.monthly_milli) FILTER (WHERE bd.begun AND bd.ends_at > w.ts[bd.i + 2]) AS v1,
                max(bd.currency) FILTER (WHERE bd.begun AND bd.ends_at > w.ts[bd.i + 2]) AS c1,
                min(bd.paid_since) AS since
            FROM w, bd GROUP BY bd.environment, bd.original_transaction_id, bd.i),
        ev AS (SELECT b.i, COALESCE(mv.c1, mv.c0) AS currency, (b.at1 AT TIME ZONE 'UTC')::date AS day,
                CASE WHEN y.v0 = 0 AND y.v1 > 0 AND NOT y.before THEN y.v1 ELSE 0 END AS a0,
                CASE WHEN y.v0 > 0 AND y.v1 > y.v0 THEN y.v1 - y.v0 ELSE 0 END AS a1,
                CASE WHEN y.v0 > 0 AND y.v1 > 0 AND y.v1 < y.v0 THEN y.v0 - y.v1 ELSE 0 END AS a2,
                CASE WHEN y.v0 > 0 AND y.v1 = 0 THEN y.v0 ELSE 0 END AS a3,
                CASE WHEN y.v0 = 0 AND y.v1 > 0 AND y.before THEN y.v1 ELSE 0 END AS a4
            FROM mv JOIN b ON b.i = mv.i
            CROSS JOIN LATERAL (SELECT COALESCE(mv.v0, 0) AS v0, COALESCE(mv.v1, 0) AS v1,
                mv.c0 IS NOT NULL OR mv.since < b.at0 AS before) y
            WHERE y.v0 <> y.v1)
        """
    }
}
