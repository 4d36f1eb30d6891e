-- Brings revenue_runs and revenue_run_days (schema/0078) up to date for the purchases (p_environments[i],
-- p_original_ids[i]) whose revenue_transactions rows changed from p_froms[i] on (their earliest changed purchase
-- date; '-infinity': any): their runs of paid service computed again (the periods as the charts' `paid` predicate,
-- each to LEAST(expiry, revocation, purchase + 400 days), empty ones skipped, overlapping or touching ones joined);
-- runs no longer there removed, new or changed ones upserted, the run before them pointed at the first of them, and
-- each day's starts and ends moved by the difference, summed over the batch (one write per day row; a day back to
-- zero removed). Incremental: when every changed period begins at or after the purchase's last run (a renewal
-- appended at the end), only that run and what follows it are computed again — the earlier runs end before it and
-- none of their periods changed —, and when the batch only added rows (p_appended), from that run as it is and the
-- periods from the changed date on, so a renewal reads and writes O(1) rows whatever the purchase's history (before
-- session 19 it read every period of the run again: a monthly subscriber's whole history); otherwise (a
-- refund or revocation of an earlier period, a transaction older than the last run) the purchase's runs are computed
-- from all of its rows. Called by bouncer_revenue_roll_up once per batch, after its rows; never in the receipt's
-- transaction. A replay changes nothing.
CREATE OR REPLACE FUNCTION bouncer_revenue_runs_sync(p_project_id uuid, p_environments text[], p_original_ids text[],
    p_froms timestamptz[], p_appended boolean[] DEFAULT NULL) RETURNS void
-- A batch's purchases are few of the project's: every statement probes them by index. The generic plans the deriver
-- uses cannot see which purchases an array names, and hashed the project's whole table against them instead.
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    v_zero_days date[];
    v_zero_envs text[];
BEGIN
    -- Each purchase's cut (its last run's start, when every changed period begins at or after it; else all of it)
    -- and, when the batch only added rows to it (p_appended[i]: none replaced or removed), the last run itself as
    -- one period in place of its periods before p_froms[i]: they are unchanged, and the run is their union.
    WITH k AS (
        SELECT k0.env, k0.oid, CASE WHEN l.s IS NOT NULL AND k0.d0 >= l.s THEN l.s ELSE '-infinity' END AS cut,
            CASE WHEN l.s IS NOT NULL AND k0.d0 >= l.s AND k0.appended THEN k0.d0 END AS seeded_from, l.s, l.e
        FROM unnest(p_environments, p_original_ids, p_froms,
            COALESCE(p_appended, array_fill(false, ARRAY[cardinality(p_original_ids)]))) AS k0 (env, oid, d0, appended)
        LEFT JOIN LATERAL (SELECT r.starts_at AS s, r.ends_at AS e FROM revenue_runs r
            WHERE r.project_id = p_project_id AND r.environment = k0.env AND r.original_transaction_id = k0.oid
            ORDER BY r.starts_at DESC LIMIT 1) l ON true),
        p AS (SELECT k.env, k.oid, v.purchase_date AS s, LEAST(v.expires_date,
                COALESCE(v.revocation_date, 'infinity'::timestamptz), v.purchase_date + interval '400 days') AS e
            FROM k JOIN revenue_transactions v ON v.project_id = p_project_id AND v.original_transaction_id = k.oid
                AND v.environment = k.env AND v.purchase_date >= COALESCE(k.seeded_from, k.cut)
            WHERE v.type = 'Auto-Renewable Subscription' AND NOT v.trial AND v.price_milli > 0
              AND v.expires_date IS NOT NULL
            UNION ALL
            SELECT k.env, k.oid, k.s, k.e FROM k WHERE k.seeded_from IS NOT NULL),
        p1 AS (SELECT p.env, p.oid, p.s, p.e, max(p.e) OVER (PARTITION BY p.env, p.oid ORDER BY p.s, p.e
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS b
            FROM p WHERE p.e > p.s),
        p2 AS (SELECT p1.env, p1.oid, p1.s, p1.e, count(*) FILTER (WHERE p1.b IS NULL OR p1.s > p1.b)
                OVER (PARTITION BY p1.env, p1.oid ORDER BY p1.s, p1.e ROWS UNBOUNDED PRECEDING) AS g
            FROM p1),
        i AS (SELECT p2.env, p2.oid, min(p2.s) AS s, max(p2.e) AS e FROM p2 GROUP BY p2.env, p2.oid, p2.g),
        n AS (SELECT i.env, i.oid, i.s, i.e, lead(i.s) OVER w AS ns, lead(i.e) OVER w AS ne,
                row_number() OVER w AS nth
            FROM i WINDOW w AS (PARTITION BY i.env, i.oid ORDER BY i.s)),
        o AS (SELECT r.environment AS env, r.original_transaction_id AS oid, r.starts_at AS s, r.ends_at AS e,
                r.next_starts_at AS ns, r.next_ends_at AS ne
            FROM k JOIN revenue_runs r ON r.project_id = p_project_id AND r.environment = k.env
                AND r.original_transaction_id = k.oid AND r.starts_at >= k.cut),
        -- The runs from the cut on, old and new, by start: one that is no longer there is removed. (Grouped, not
        -- joined: with hash and merge joins off, a join of two of the batch's sets compares every pair, quadratic in
        -- the batch; a grouping is one sort.)
        m AS (SELECT x.env, x.oid, x.s, bool_or(x.old) AS had, bool_or(NOT x.old) AS has
            FROM (SELECT o.env, o.oid, o.s, true AS old FROM o UNION ALL SELECT n.env, n.oid, n.s, false FROM n) x
            GROUP BY x.env, x.oid, x.s),
        gone AS (DELETE FROM revenue_runs r USING m WHERE r.project_id = p_project_id AND r.environment = m.env
              AND r.original_transaction_id = m.oid AND r.starts_at = m.s AND m.had AND NOT m.has),
        -- A new or changed run upserted: one the table does not hold as it is (the statement's snapshot: o's rows, by
        -- their key).
        put AS (INSERT INTO revenue_runs AS r (project_id, environment, original_transaction_id, starts_at, ends_at,
                next_starts_at, next_ends_at)
            SELECT p_project_id, n.env, n.oid, n.s, n.e, n.ns, n.ne FROM n
            WHERE NOT EXISTS (SELECT 1 FROM revenue_runs r0 WHERE r0.project_id = p_project_id
                AND r0.environment = n.env AND r0.original_transaction_id = n.oid AND r0.starts_at = n.s
                AND r0.ends_at = n.e AND r0.next_starts_at IS NOT DISTINCT FROM n.ns
                AND r0.next_ends_at IS NOT DISTINCT FROM n.ne)
            ON CONFLICT (project_id, environment, original_transaction_id, starts_at) DO UPDATE SET
                ends_at = EXCLUDED.ends_at, next_starts_at = EXCLUDED.next_starts_at,
                next_ends_at = EXCLUDED.next_ends_at),
        -- The run before a cut leads to the first run from the cut on (none: NULL).
        before AS (UPDATE revenue_runs r SET next_starts_at = f.s, next_ends_at = f.e
            FROM (SELECT kn.env, kn.oid, kn.s, kn.e, (SELECT max(r1.starts_at) FROM revenue_runs r1
                        WHERE r1.project_id = p_project_id AND r1.environment = kn.env
                          AND r1.original_transaction_id = kn.oid AND r1.starts_at < kn.cut) AS prior
                  -- Each purchase with its first run from the cut on (grouped, as m).
                  FROM (SELECT x.env, x.oid, max(x.cut) AS cut, max(x.s) AS s, max(x.e) AS e
                      FROM (SELECT k.env, k.oid, k.cut, NULL::timestamptz AS s, NULL::timestamptz AS e FROM k
                          UNION ALL SELECT n.env, n.oid, NULL, n.s, n.e FROM n WHERE n.nth = 1) x
                      GROUP BY x.env, x.oid) kn
                  WHERE kn.cut > '-infinity') f
            WHERE r.project_id = p_project_id AND r.environment = f.env AND r.original_transaction_id = f.oid
              AND r.starts_at = f.prior
              AND (r.next_starts_at, r.next_ends_at) IS DISTINCT FROM (f.s, f.e)),
        -- The midnight that closes an instant's day: the first one at or after it.
        d AS (SELECT x.env, x.day, sum(x.s) AS s, sum(x.e) AS e
            FROM (SELECT o.env, ((o.s - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1 AS day, -1 AS s,
                    0 AS e FROM o
                UNION ALL SELECT o.env, ((o.e - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1, 0, -1 FROM o
                UNION ALL SELECT n.env, ((n.s - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1, 1, 0 FROM n
                UNION ALL SELECT n.env, ((n.e - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1, 0, 1 FROM n) x
            GROUP BY x.env, x.day HAVING sum(x.s) <> 0 OR sum(x.e) <> 0),
        up AS (INSERT INTO revenue_run_days AS rd (project_id, environment, day, starts, ends)
            SELECT p_project_id, d.env, d.day, d.s, d.e FROM d
            ON CONFLICT (project_id, day, environment) DO UPDATE SET starts = rd.starts + EXCLUDED.starts,
                ends = rd.ends + EXCLUDED.ends
            RETURNING rd.environment, rd.day, rd.starts, rd.ends)
    SELECT array_agg(up.day), array_agg(up.environment) INTO v_zero_days, v_zero_envs
    FROM up WHERE up.starts = 0 AND up.ends = 0;
    -- Each by its whole key (a day that falls back to zero is rare: its one run moved).
    FOR i IN 1 .. COALESCE(cardinality(v_zero_days), 0) LOOP
        DELETE FROM revenue_run_days rd WHERE rd.project_id = p_project_id AND rd.day = v_zero_days[i]
          AND rd.environment = v_zero_envs[i] AND rd.starts = 0 AND rd.ends = 0;
    END LOOP;
END;
$$;
