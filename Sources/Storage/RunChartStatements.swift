import Domain

/// `active_subscriptions` and `churn` without a product or country filter, from the deriver's runs of paid service
/// (schema/0078: `revenue_runs`, each purchase's union of paid periods, and `revenue_run_days`, how many runs begin
/// and end by each midnight) instead of the sweep over the range's periods (SweepChartStatements.swift, which the
/// filtered charts still read: a run joins periods of every product and storefront of its purchase). The instants
/// `T_0 … T_n` are the sweep's (each interval's start, then the last one's end, each at most now); the definitions
/// (README "Charts") are the same and ChartsE2ETests holds both paths to the same hand-computed values.
extension PostgresChartStore {
    /// `w`: the instants (`ts`, 1-based, as the sweep's) and `n`; `kd`: each instant `k` (0-based) with its time `at`,
    /// its UTC day `d` and that day's midnight.
    static let instants = """
        w AS MATERIALIZED (SELECT ARRAY(SELECT LEAST(x, q.now) FROM unnest(q.bounds) x ORDER BY x) AS ts,
                cardinality(q.bounds) - 1 AS n
            FROM q),
        kd AS MATERIALIZED (SELECT k.k, w.ts[k.k + 1] AS at, (w.ts[k.k + 1] AT TIME ZONE 'UTC')::date AS d,
                (w.ts[k.k + 1] AT TIME ZONE 'UTC')::date::timestamp AT TIME ZONE 'UTC' AS midnight
            FROM w, generate_series(0, w.n) k (k))
        """

    /// `w` (the instants, as the sweep's) and `act`: the purchases active at each instant `k` (a run with
    /// `starts_at ≤ T_k < ends_at`): the running sum of the days' starts − ends up to the instant's midnight, plus, for
    /// an instant past its midnight (now), the runs begun and ended since, from their indexes.
    static let activeRuns = """
        \(instants),
        dd AS (SELECT r.day, sum(r.starts - r.ends) AS delta FROM q, revenue_run_days r
            WHERE r.project_id = q.project AND (q.env IS NULL OR r.environment = q.env)
              AND r.day <= (SELECT max(kd.d) FROM kd)
            GROUP BY r.day),
        cum AS MATERIALIZED (SELECT dd.day, sum(dd.delta) OVER (ORDER BY dd.day) AS n FROM dd),
        act AS (SELECT kd.k, COALESCE((SELECT cum.n FROM cum WHERE cum.day <= kd.d ORDER BY cum.day DESC LIMIT 1), 0)
                + CASE WHEN kd.at > kd.midnight THEN (SELECT count(*) FROM revenue_runs r
                        WHERE r.project_id = q.project AND (q.env IS NULL OR r.environment = q.env)
                          AND r.starts_at > kd.midnight AND r.starts_at <= kd.at)
                    - (SELECT count(*) FROM revenue_runs r
                        WHERE r.project_id = q.project AND (q.env IS NULL OR r.environment = q.env)
                          AND r.ends_at > kd.midnight AND r.ends_at <= kd.at) ELSE 0 END AS n
            FROM q, kd)
        """

    static let runStatements: [Chart: String] = [
        .activeSubscriptions: """
            \(activeRuns)
            SELECT b.i, NULL::text AS currency, act.n::int8 AS m0 FROM b JOIN act ON act.k = b.i + 1
            """,
        // Churned in interval i: active at T_i, not at T_{i+1}: a run covering T_i that ends by T_{i+1} (`j`: the
        // 1-based instant T_i of its end), unless a later run of the purchase covers T_{i+1}: the next one (its
        // columns), or, when that one also ended by then, one after it (looked up).
        .churn: """
            \(activeRuns),
            ended AS (SELECT width_bucket(r.ends_at - interval '1 microsecond', w.ts) AS j, r.environment,
                    r.original_transaction_id AS o, r.starts_at, r.next_starts_at, r.next_ends_at
                FROM q, w, revenue_runs r WHERE r.project_id = q.project AND (q.env IS NULL OR r.environment = q.env)
                  AND r.ends_at > w.ts[1] AND r.ends_at <= w.ts[w.n + 1]),
            en AS (SELECT e.j - 1 AS i, count(*) AS n FROM q, w, ended e
                WHERE e.starts_at <= w.ts[e.j]
                  AND CASE WHEN e.next_starts_at IS NULL OR e.next_starts_at > w.ts[e.j + 1] THEN true
                      WHEN e.next_ends_at > w.ts[e.j + 1] THEN false
                      ELSE NOT EXISTS (SELECT 1 FROM revenue_runs r
                          WHERE r.project_id = q.project AND r.environment = e.environment
                            AND r.original_transaction_id = e.o AND r.starts_at <= w.ts[e.j + 1]
                            AND r.ends_at > w.ts[e.j + 1]) END
                GROUP BY 1)
            SELECT b.i, NULL::text AS currency, act.n::int8 AS m0, COALESCE(en.n, 0)::int8 AS m1
            FROM b JOIN act ON act.k = b.i LEFT JOIN en ON en.i = b.i
            """,
    ]
}
