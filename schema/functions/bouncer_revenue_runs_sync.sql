-- Brings revenue_runs and revenue_run_days (schema/0078) up to date for one purchase from its revenue_transactions
-- rows: its runs of paid service computed again (the periods as the charts' `paid` predicate, each to
-- LEAST(expiry, revocation, purchase + 400 days), empty ones skipped, overlapping or touching ones joined); runs no
-- longer there removed, new or changed ones upserted, and each day's starts and ends moved by the difference (a day
-- back to zero removed). Called by bouncer_revenue_roll_up for every purchase it rolls up, after its rows; never in
-- the receipt's transaction. A replay changes nothing.
CREATE OR REPLACE FUNCTION bouncer_revenue_runs_sync(p_project_id uuid, p_environment text, p_original_id text)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_zero date[];
BEGIN
    WITH p AS (SELECT v.purchase_date AS s, LEAST(v.expires_date, COALESCE(v.revocation_date, 'infinity'::timestamptz),
                v.purchase_date + interval '400 days') AS e
            FROM revenue_transactions v
            WHERE v.project_id = p_project_id AND v.original_transaction_id = p_original_id
              AND v.environment = p_environment AND v.type = 'Auto-Renewable Subscription' AND NOT v.trial
              AND v.price_milli > 0 AND v.expires_date IS NOT NULL),
        p1 AS (SELECT p.s, p.e, max(p.e) OVER (ORDER BY p.s, p.e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS b
            FROM p WHERE p.e > p.s),
        p2 AS (SELECT p1.s, p1.e, count(*) FILTER (WHERE p1.b IS NULL OR p1.s > p1.b)
                OVER (ORDER BY p1.s, p1.e ROWS UNBOUNDED PRECEDING) AS g
            FROM p1),
        i AS (SELECT min(p2.s) AS s, max(p2.e) AS e FROM p2 GROUP BY p2.g),
        n AS (SELECT i.s, i.e, lead(i.s) OVER (ORDER BY i.s) AS ns, lead(i.e) OVER (ORDER BY i.s) AS ne FROM i),
        o AS (SELECT r.starts_at AS s, r.ends_at AS e, r.next_starts_at AS ns, r.next_ends_at AS ne FROM revenue_runs r
            WHERE r.project_id = p_project_id AND r.environment = p_environment
              AND r.original_transaction_id = p_original_id),
        gone AS (DELETE FROM revenue_runs r WHERE r.project_id = p_project_id AND r.environment = p_environment
              AND r.original_transaction_id = p_original_id AND NOT EXISTS (SELECT 1 FROM n WHERE n.s = r.starts_at)),
        put AS (INSERT INTO revenue_runs AS r (project_id, environment, original_transaction_id, starts_at, ends_at,
                next_starts_at, next_ends_at)
            SELECT p_project_id, p_environment, p_original_id, n.s, n.e, n.ns, n.ne FROM n
            WHERE NOT EXISTS (SELECT 1 FROM o WHERE o.s = n.s AND o.e = n.e AND o.ns IS NOT DISTINCT FROM n.ns
                AND o.ne IS NOT DISTINCT FROM n.ne)
            ON CONFLICT (project_id, environment, original_transaction_id, starts_at) DO UPDATE SET
                ends_at = EXCLUDED.ends_at, next_starts_at = EXCLUDED.next_starts_at,
                next_ends_at = EXCLUDED.next_ends_at),
        -- The midnight that closes an instant's day: the first one at or after it.
        d AS (SELECT x.day, sum(x.s) AS s, sum(x.e) AS e
            FROM (SELECT ((o.s - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1 AS day, -1 AS s, 0 AS e FROM o
                UNION ALL SELECT ((o.e - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1, 0, -1 FROM o
                UNION ALL SELECT ((n.s - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1, 1, 0 FROM n
                UNION ALL SELECT ((n.e - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1, 0, 1 FROM n) x
            GROUP BY x.day HAVING sum(x.s) <> 0 OR sum(x.e) <> 0),
        up AS (INSERT INTO revenue_run_days AS rd (project_id, environment, day, starts, ends)
            SELECT p_project_id, p_environment, d.day, d.s, d.e FROM d
            ON CONFLICT (project_id, day, environment) DO UPDATE SET starts = rd.starts + EXCLUDED.starts,
                ends = rd.ends + EXCLUDED.ends
            RETURNING rd.day, rd.starts, rd.ends)
    SELECT array_agg(up.day) FILTER (WHERE up.starts = 0 AND up.ends = 0) INTO v_zero FROM up;
    IF v_zero IS NOT NULL THEN
        DELETE FROM revenue_run_days rd WHERE rd.project_id = p_project_id AND rd.environment = p_environment
          AND rd.day = ANY (v_zero) AND rd.starts = 0 AND rd.ends = 0;
    END IF;
END;
$$;
