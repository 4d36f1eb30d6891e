import Domain

/// The charts of states at instants (`active_subscriptions`, `active_trials`, `churn`, `mrr`, `mrr_movement`) as one
/// sweep over the periods that touch the range, instead of a scan of the last 400 days per interval (a daily chart of
/// a year was 366 such scans). The instants are `T_0 … T_n`: each interval's start, then the last one's end, each at
/// most now (`T_i` is interval i's `at0`, `T_{i+1}` its `at1`). A period active at an instant (begun by it, not yet
/// expired nor revoked, begun within 400 days before it: no period is longer than a year) covers a run of instants
/// `[a, z]` (0-based), found by `width_bucket` in the sorted instants; counts follow from +1 at `a` and −1 after `z`,
/// summed in order. The definitions (README "Charts") are unchanged; ChartsE2ETests holds them to hand-computed values.
extension PostgresChartStore {
    /// `w`: the instants (`ts`, 1-based) and `n`. `c`: the periods matching `predicate` that cover an instant, with
    /// `a`, `z` and their purchase's id `o`; those running at `T_0` or begun since are found through
    /// `revenue_transactions_ends_idx` (schema/0071).
    static func sweepPeriods(_ predicate: String) -> String {
        """
        w AS MATERIALIZED (SELECT ARRAY(SELECT LEAST(x, q.now) FROM unnest(q.bounds) x ORDER BY x) AS ts,
                cardinality(q.bounds) - 1 AS n
            FROM q),
        p0 AS (SELECT t.original_transaction_id AS o, t.transaction_id AS id, t.purchase_date AS s, t.currency,
                t.price_milli, t.expires_date,
                LEAST(t.expires_date, COALESCE(t.revocation_date, 'infinity'::timestamptz),
                    t.purchase_date + interval '400 days') AS e
            FROM w, t WHERE \(predicate) AND t.purchase_date <= w.ts[w.n + 1]
              AND t.expires_date IS NOT NULL
              AND LEAST(t.expires_date, COALESCE(t.revocation_date, 'infinity'::timestamptz)) > w.ts[1]),
        pp AS MATERIALIZED (SELECT p0.*, width_bucket(p0.s - interval '1 microsecond', w.ts) AS a,
                width_bucket(p0.e - interval '1 microsecond', w.ts) - 1 AS z
            FROM w, p0 WHERE p0.e > w.ts[1]),
        c AS (SELECT pp.* FROM pp WHERE pp.a <= pp.z)
        """
    }

    /// `isl`: each purchase's runs of covered instants (runs that touch joined), as `(o, a, z)`.
    static let islands = """
        r0 AS (SELECT c.o, c.a, c.z, max(c.z) OVER (PARTITION BY c.o ORDER BY c.a, c.z
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM c),
        r1 AS (SELECT r0.*, sum(CASE WHEN r0.before IS NULL OR r0.a > r0.before + 1 THEN 1 ELSE 0 END)
                OVER (PARTITION BY r0.o ORDER BY r0.a, r0.z ROWS UNBOUNDED PRECEDING) AS g FROM r0),
        isl AS (SELECT r1.o, min(r1.a) AS a, max(r1.z) AS z FROM r1 GROUP BY r1.o, r1.g),
        cov AS (SELECT k.k, COALESCE(sum(sum(d.d)) OVER (ORDER BY k.k), 0) AS n
            FROM w CROSS JOIN LATERAL generate_series(0, w.n) k (k)
            LEFT JOIN (SELECT isl.a AS k, 1 AS d FROM isl UNION ALL SELECT isl.z + 1, -1 FROM isl) d ON d.k = k.k
            GROUP BY k.k)
        """

    /// `seg`: each purchase's value at each instant as runs `(o, a, z, v, currency)`: the latest period active (the
    /// greatest purchase date, as `monthly`'s DISTINCT ON). When no later period ends before an earlier one
    /// (renewals, upgrades), a period is the latest from its first instant until the next one begins; a purchase
    /// where one does (`nested`: a later period refunded away early) is taken instant by instant.
    static let segments = """
        c1 AS (SELECT c.o, c.a, c.z, c.currency, bouncer_money_monthly(c.price_milli, c.s, c.expires_date) AS v,
                lead(c.a) OVER o AS next_a, lead(c.z) OVER o AS next_z
            FROM c WINDOW o AS (PARTITION BY c.o ORDER BY c.s, c.id)),
        -- A later period ends before an earlier one exactly when the ends, in purchase order, fall somewhere.
        nested AS (SELECT DISTINCT c1.o FROM c1 WHERE c1.next_z < c1.z),
        seg AS (SELECT c1.o, c1.a, LEAST(c1.z, COALESCE(c1.next_a - 1, c1.z)) AS z, c1.v, c1.currency FROM c1
                WHERE NOT EXISTS (SELECT 1 FROM nested WHERE nested.o = c1.o)
                  AND c1.a <= LEAST(c1.z, COALESCE(c1.next_a - 1, c1.z))
            UNION ALL
            (SELECT DISTINCT ON (c.o, k.k) c.o, k.k, k.k, bouncer_money_monthly(c.price_milli, c.s, c.expires_date),
                c.currency
            FROM c JOIN nested ON nested.o = c.o CROSS JOIN LATERAL generate_series(c.a, c.z) k (k)
            ORDER BY c.o, k.k, c.s DESC, c.id DESC))
        """

    /// MRR from `dk` (per currency, monthly price `v` and instant `k`, how many purchases begin holding it there
    /// minus how many stop): how many purchases hold each value from each change to the next, at each interval's
    /// end, converted at that day's rate.
    static let held = """
        h AS (SELECT x.currency, x.v, k.k, x.n
            FROM w, (SELECT dk.currency, dk.v, dk.k, sum(dk.d) OVER cv AS n, lead(dk.k) OVER cv AS next_k
                FROM dk WINDOW cv AS (PARTITION BY dk.currency, dk.v ORDER BY dk.k)) x
            CROSS JOIN LATERAL generate_series(x.k, COALESCE(x.next_k - 1, w.n)) k (k)),
        e AS (SELECT b.i, h.currency, (b.at1 AT TIME ZONE 'UTC')::date AS day, h.v AS a0, 1::int8 AS a1, h.n
            FROM b JOIN h ON h.k = b.i + 1 AND h.n > 0),
        \(converted([([(0, 1)], nil), ([], 1)], counted: true))
        """

    static let sweepStatements: [Chart: String] = [
        .activeSubscriptions: """
            \(sweepPeriods(paid)),
            \(islands)
            SELECT b.i, NULL::text AS currency, cov.n::int8 AS m0 FROM b JOIN cov ON cov.k = b.i + 1
            """,
        .activeTrials: """
            \(sweepPeriods("t.trial AND t.expires_date IS NOT NULL")),
            \(islands)
            SELECT b.i, NULL::text AS currency, cov.n::int8 AS m0 FROM b JOIN cov ON cov.k = b.i + 1
            """,
        // Churned in interval i: covered at T_i, not at T_{i+1}: a run ending at i (runs that touch are joined).
        .churn: """
            \(sweepPeriods(paid)),
            \(islands),
            ended AS (SELECT isl.z AS i, count(*) AS n FROM isl GROUP BY isl.z)
            SELECT b.i, NULL::text AS currency, cov.n::int8 AS m0, COALESCE(ended.n, 0)::int8 AS m1
            FROM b JOIN cov ON cov.k = b.i LEFT JOIN ended ON ended.i = b.i
            """,
        .mrr: """
            \(sweepPeriods(paid)),
            \(segments),
            dk AS (SELECT d.currency, d.v, d.k, sum(d.d) AS d
                FROM (SELECT seg.currency, seg.v, seg.a AS k, 1 AS d FROM seg
                    UNION ALL SELECT seg.currency, seg.v, seg.z + 1, -1 FROM seg) d GROUP BY 1, 2, 3),
            \(held)
            """,
        // Each purchase's change between T_i and T_{i+1}: where a run begins (from the run before it when that
        // ends at T_i, else from nothing) and where one ends with no run right after. `before` (reactivation
        // rather than new): a run before it, else a paid transaction of the purchase before T_i.
        .mrrMovement: """
            \(sweepPeriods(paid)),
            \(segments),
            s1 AS (SELECT seg.*, lag(seg.z) OVER o AS pz, lag(seg.v) OVER o AS pv, lead(seg.a) OVER o AS na
                FROM seg WINDOW o AS (PARTITION BY seg.o ORDER BY seg.a)),
            ev AS (SELECT s1.o, s1.a - 1 AS i, CASE WHEN s1.pz = s1.a - 1 THEN s1.pv ELSE 0 END AS v0, s1.v AS v1,
                    s1.currency, s1.pz IS NOT NULL AS prior
                FROM s1 WHERE s1.a >= 1
                UNION ALL
                SELECT s1.o, s1.z, s1.v, 0, s1.currency, true FROM w, s1
                WHERE s1.z <= w.n - 1 AND (s1.na IS NULL OR s1.na > s1.z + 1)),
            m AS (SELECT ev.*, b.at0, b.at1 FROM ev JOIN b ON b.i = ev.i),
            e AS (SELECT m.i, m.currency, (m.at1 AT TIME ZONE 'UTC')::date AS day,
                    CASE WHEN m.v0 = 0 AND m.v1 > 0 AND NOT y.before THEN m.v1 ELSE 0 END AS a0,
                    CASE WHEN m.v0 > 0 AND m.v1 > m.v0 THEN m.v1 - m.v0 ELSE 0 END AS a1,
                    CASE WHEN m.v0 > 0 AND m.v1 > 0 AND m.v1 < m.v0 THEN m.v0 - m.v1 ELSE 0 END AS a2,
                    CASE WHEN m.v0 > 0 AND m.v1 = 0 THEN m.v0 ELSE 0 END AS a3,
                    CASE WHEN m.v0 = 0 AND m.v1 > 0 AND y.before THEN m.v1 ELSE 0 END AS a4
                FROM q, m CROSS JOIN LATERAL (SELECT m.prior OR (m.v0 = 0 AND EXISTS (SELECT 1
                    FROM revenue_transactions w WHERE w.project_id = q.project AND w.original_transaction_id = m.o
                      AND NOT w.trial AND w.price_milli > 0 AND w.purchase_date < m.at0)) AS before) y
                WHERE m.v0 <> m.v1),
            \(converted([([(0, 1)], nil), ([(1, 1)], nil), ([(2, 1)], nil), ([(3, 1)], nil), ([(4, 1)], nil)]))
            """,
    ]
}
