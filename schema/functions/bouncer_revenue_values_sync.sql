-- Brings revenue_values and revenue_value_days (schema/0085) up to date for one purchase whose revenue_transactions
-- rows changed from p_from on (bouncer_revenue_roll_up's earliest changed purchase date; '-infinity': all of them).
-- Its value before p_from cannot have changed (it depends on the periods begun by then), so only the spans from p_from
-- on are computed again, from the periods that reach past p_from: the rows from p_from on, and the earlier ones still
-- running then, found by walking back from p_from until the running end of paid service (ended_max) falls by it (a
-- renewal reads the row before it), plus fully refunded ones (outside ended_max: their partial index), never more
-- than 400 days back (no period is longer). The span running into p_from keeps its part before; new or changed spans
-- are written, spans no longer there removed, and each day's count to move by the difference returned (value_days: the
-- caller moves revenue_value_days once for its batch, bouncer_revenue_value_days_move: every purchase of a batch moved
-- the same day rows, one upsert each, `wp4`), with mrr_movement's moves (movement_days, schema/0087, moved once for
-- the batch too): O(1) rows per changed transaction. Called by bouncer_revenue_roll_up for every purchase it rolls up, after
-- its rows (and then, once for the batch, subscription_retention's rows: bouncer_revenue_cohort_sync); never in the
-- receipt's transaction. A replay changes nothing.
-- Planned once per session under bouncer_derive_changes' force_generic_plan: each statement reads by the purchase's own
-- keys only (no condition a plan could turn into a range of the project's rows).
CREATE OR REPLACE FUNCTION bouncer_revenue_values_sync(p_project_id uuid, p_environment text, p_original_id text,
    p_from timestamptz, OUT value_days revenue_value_days[], OUT movement_days revenue_movement_days[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    c refcursor;
    r record;
    v_ids text[] := '{}';
    v_stop timestamptz;
    v_keep revenue_values;
    v_since timestamptz;
    v_old revenue_values[];
    v_before revenue_values[];
    v_new revenue_values[];
    v_gone timestamptz[];
BEGIN
    -- The spans that reach p_from; the first may have begun before it (kept up to p_from), and its paid_since holds (the
    -- purchase's first payment came before that span began, so no change from p_from on moves it).
    -- (And those that ended in the day before it: mrr_movement's first day may begin under one, v_before.)
    -- (And, from the same rows, paid_since of the latest span begun before p_from: a span that ended by p_from.)
    SELECT array_agg(s ORDER BY s.starts_at) FILTER (WHERE s.ends_at >= p_from),
        array_agg(s) FILTER (WHERE s.ends_at < p_from AND s.ends_at > p_from - interval '24 hours'),
        (array_agg(s.paid_since ORDER BY s.starts_at DESC) FILTER (WHERE s.starts_at < p_from))[1]
    INTO v_old, v_before, v_since FROM revenue_values s
    WHERE s.project_id = p_project_id AND s.environment = p_environment AND s.original_transaction_id = p_original_id;
    IF (v_old[1]).starts_at < p_from THEN
        v_keep := v_old[1];
        v_since := v_keep.paid_since;
    END IF;
    IF v_since IS NULL THEN
        SELECT v.purchase_date INTO v_since FROM revenue_transactions v
        WHERE v.project_id = p_project_id AND v.original_transaction_id = p_original_id
          AND v.environment = p_environment AND NOT v.trial AND v.price_milli > 0
        ORDER BY v.original_transaction_id, v.purchase_date LIMIT 1;
    END IF;
    -- Earlier periods still running after p_from: only when the span before it runs past it, or ends at p_from where
    -- another begins (a later period there may hide an earlier one): the old spans cover every period, up to the same
    -- 400-day bound. A renewal that begins as the last period ends reads none.
    IF v_keep.ends_at > p_from OR (v_keep.ends_at = p_from AND (v_old[2]).starts_at = p_from) THEN
        OPEN c FOR SELECT v.transaction_id, v.purchase_date, v.ended_max,
                v.type = 'Auto-Renewable Subscription' AND NOT v.trial AND v.price_milli > 0
                    AND v.expires_date IS NOT NULL AND LEAST(v.expires_date,
                        COALESCE(v.revocation_date, 'infinity'::timestamptz),
                        v.purchase_date + interval '400 days') > p_from AS reaches
            FROM revenue_transactions v
            WHERE v.project_id = p_project_id AND v.original_transaction_id = p_original_id
              AND v.purchase_date < p_from AND v.purchase_date > p_from - interval '400 days'
              AND v.environment = p_environment
            ORDER BY v.original_transaction_id DESC, v.purchase_date DESC;
        LOOP
            FETCH c INTO r;
            EXIT WHEN NOT FOUND OR r.purchase_date < v_stop;
            IF r.reaches THEN
                v_ids := v_ids || r.transaction_id;
            END IF;
            -- Every row up to this one ended by p_from (rows of its purchase date still read: their order is a tie).
            IF v_stop IS NULL AND (r.ended_max IS NULL OR r.ended_max <= p_from) THEN
                v_stop := r.purchase_date;
            END IF;
        END LOOP;
        CLOSE c;
        v_ids := v_ids || ARRAY(SELECT v.transaction_id FROM revenue_transactions v
            WHERE v.project_id = p_project_id AND v.original_transaction_id = p_original_id
              AND v.environment = p_environment AND v.refund_milli_percent >= 100000
              AND v.purchase_date < p_from AND v.purchase_date > p_from - interval '400 days'
              AND v.type = 'Auto-Renewable Subscription' AND NOT v.trial AND v.price_milli > 0
              AND v.expires_date IS NOT NULL
              AND LEAST(v.expires_date, COALESCE(v.revocation_date, 'infinity'::timestamptz)) > p_from);
    END IF;
    -- The spans from p_from on: between consecutive period boundaries, the latest period covering the piece's start;
    -- pieces of one value that touch joined, and the first joined to the kept span when it continues its value.
    -- (Two reads, each by its own index: the rows from p_from on by the purchase's, the earlier ones by their keys.)
    WITH rt AS (SELECT v.* FROM revenue_transactions v
            WHERE v.project_id = p_project_id AND v.original_transaction_id = p_original_id
              AND v.purchase_date >= p_from AND v.environment = p_environment
            UNION ALL
            SELECT v.* FROM revenue_transactions v
            WHERE cardinality(v_ids) > 0 AND v.project_id = p_project_id AND v.environment = p_environment
              AND v.transaction_id = ANY (v_ids)),
        p AS (SELECT rt.transaction_id AS id, rt.purchase_date AS s, LEAST(rt.expires_date,
                COALESCE(rt.revocation_date, 'infinity'::timestamptz), rt.purchase_date + interval '400 days') AS e,
                rt.currency, bouncer_money_monthly(rt.price_milli, rt.purchase_date, rt.expires_date) AS m
            FROM rt
            WHERE rt.type = 'Auto-Renewable Subscription' AND NOT rt.trial AND rt.price_milli > 0
              AND rt.expires_date IS NOT NULL),
        x AS (SELECT GREATEST(p.s, p_from) AS x FROM p WHERE p.e > GREATEST(p.s, p_from)
            UNION SELECT p.e FROM p WHERE p.e > GREATEST(p.s, p_from)),
        k AS (SELECT x.x AS a, lead(x.x) OVER (ORDER BY x.x) AS z FROM x),
        top AS (SELECT k.a, k.z, t.currency, t.m FROM k CROSS JOIN LATERAL (SELECT p.currency, p.m FROM p
                WHERE p.s <= k.a AND p.e > k.a ORDER BY p.s DESC, p.id DESC LIMIT 1) t
            WHERE k.z IS NOT NULL
            UNION ALL
            SELECT v_keep.starts_at, p_from, v_keep.currency, v_keep.monthly_milli WHERE v_keep.starts_at IS NOT NULL),
        b AS (SELECT top.*, CASE WHEN top.a = lag(top.z) OVER w AND top.currency = lag(top.currency) OVER w
                    AND top.m = lag(top.m) OVER w THEN 0 ELSE 1 END AS brk
            FROM top WINDOW w AS (ORDER BY top.a)),
        g AS (SELECT b.*, sum(b.brk) OVER (ORDER BY b.a) AS grp FROM b)
    SELECT array_agg(ROW(p_project_id, p_environment, p_original_id, n.s, n.e, n.currency, n.m, v_since)::revenue_values
            ORDER BY n.s)
    INTO v_new
    FROM (SELECT min(g.a) AS s, max(g.z) AS e, g.currency, g.m FROM g GROUP BY g.grp, g.currency, g.m) n;
    value_days := '{}';
    movement_days := '{}';
    IF v_old IS NOT DISTINCT FROM v_new THEN
        RETURN;
    END IF;
    -- A span that keeps its start is updated in place (a renewal moves its end), one that begins elsewhere written,
    -- one whose start is gone removed.
    v_gone := ARRAY(SELECT o.starts_at FROM unnest(v_old) o
        WHERE o.starts_at <> ALL (ARRAY(SELECT n.starts_at FROM unnest(v_new) n)));
    IF cardinality(v_gone) > 0 THEN
        DELETE FROM revenue_values s WHERE s.project_id = p_project_id AND s.environment = p_environment
          AND s.original_transaction_id = p_original_id AND s.starts_at = ANY (v_gone);
    END IF;
    INSERT INTO revenue_values AS s SELECT n.* FROM unnest(v_new) n WHERE NOT (n = ANY (COALESCE(v_old, '{}')))
    ON CONFLICT (project_id, environment, original_transaction_id, starts_at) DO UPDATE SET ends_at = EXCLUDED.ends_at,
        currency = EXCLUDED.currency, monthly_milli = EXCLUDED.monthly_milli, paid_since = EXCLUDED.paid_since;
    -- mrr_movement's days (schema/0087), from the spans before and after.
    movement_days := bouncer_revenue_movement_moves(p_project_id, p_environment, p_from, v_before, v_old, v_new);
    -- Each span counts +1 on the day that closes its start, −1 on the day that closes its end; a removed one the
    -- opposite.
    value_days := ARRAY(SELECT ROW(p_project_id, p_environment, x.day, x.currency, x.m, sum(x.n))::revenue_value_days
        FROM (SELECT ((o.starts_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1 AS day, o.currency,
                o.monthly_milli AS m, -1 AS n FROM unnest(v_old) o
            UNION ALL SELECT ((o.ends_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1, o.currency,
                o.monthly_milli, 1 FROM unnest(v_old) o
            UNION ALL SELECT ((n.starts_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1, n.currency,
                n.monthly_milli, 1 FROM unnest(v_new) n
            UNION ALL SELECT ((n.ends_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1, n.currency,
                n.monthly_milli, -1 FROM unnest(v_new) n) x
        GROUP BY x.day, x.currency, x.m HAVING sum(x.n) <> 0);
END;
$$;
