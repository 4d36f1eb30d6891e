-- Brings revenue_values and revenue_value_days (schema/0085) up to date for a batch of purchases whose
-- revenue_transactions rows changed (p_envs[i], p_ids[i]) from p_froms[i] on (bouncer_revenue_roll_up's earliest changed
-- purchase date of each; '-infinity': all of them). A purchase's value before its p_from cannot have changed (it depends
-- on the periods begun by then), so only its spans from p_from on are computed again, from the periods that reach past
-- p_from: its rows from p_from on, and the earlier ones still running then — those begun since the latest earlier row by
-- which the running end of paid service (ended_max) had fallen to p_from (every row before that one ended by then),
-- plus fully refunded ones (outside ended_max: their partial index), never more than 400 days back (no period is
-- longer); read only when the span before p_from runs past it (a renewal that begins as the last period ends reads
-- none). The span running into p_from keeps its part before; new or changed spans are written, spans no longer there
-- removed, and each day's count to move by the difference returned (value_days: the caller moves revenue_value_days
-- once for its batch, bouncer_revenue_value_days_move), with mrr_movement's moves (movement_days, schema/0087,
-- bouncer_revenue_movement_moves per changed purchase, moved once for the batch too): O(1) rows per changed
-- transaction. Called by bouncer_revenue_roll_up once per batch, after its rows (and then subscription_retention's rows:
-- bouncer_revenue_cohort_sync); never in the receipt's transaction. A replay changes nothing.
-- One statement computes every purchase's spans (each purchase's reads are index probes by its own keys, and its spans
-- are computed from its own periods only: a lateral subquery per purchase, so the work is linear in the batch with
-- hash and merge joins off); then one DELETE, one INSERT … ON CONFLICT and one grouping of the day moves for the batch.
-- Until session 19 (issue 22): the same computation once per purchase, six statements each (~340 µs a purchase).
-- Its oracle: RevenueRollUpOracleTests.valuesSyncDefinition, the per-purchase function as it was.
CREATE OR REPLACE FUNCTION bouncer_revenue_values_sync(p_project_id uuid, p_envs text[], p_ids text[],
    p_froms timestamptz[], OUT value_days revenue_value_days[], OUT movement_days revenue_movement_days[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_old revenue_values[];
    v_new revenue_values[];
    v_gone revenue_values[];
    v_put revenue_values[];
BEGIN
    value_days := '{}';
    movement_days := '{}';
    -- q: each purchase's spans that reach p_from (old; the first may have begun before it, kept up to p_from, and its
    -- paid_since holds: the purchase's first payment came before that span began), those that ended in the day before
    -- it (before: mrr_movement's first day may begin under one), and paid_since of the latest span begun before p_from
    -- (a span that ended by p_from).
    WITH q AS MATERIALIZED (SELECT k.env, k.id, k.f, o.old, o.before,
                CASE WHEN (o.old[1]).starts_at < k.f THEN o.old[1] END AS keep, o.since
            FROM unnest(p_envs, p_ids, p_froms) AS k (env, id, f)
            -- (Each span as ROW(s.*)::revenue_values, not the whole-row s: on Citus the statement runs on the
            -- tenant's worker, where s is a row of the shard's own type.)
            CROSS JOIN LATERAL (SELECT array_agg(ROW(s.*)::revenue_values ORDER BY s.starts_at)
                        FILTER (WHERE s.ends_at >= k.f) AS old,
                    array_agg(ROW(s.*)::revenue_values)
                        FILTER (WHERE s.ends_at < k.f AND s.ends_at > k.f - interval '24 hours') AS before,
                    (array_agg(s.paid_since ORDER BY s.starts_at DESC) FILTER (WHERE s.starts_at < k.f))[1] AS since
                FROM revenue_values s
                WHERE s.project_id = p_project_id AND s.environment = k.env AND s.original_transaction_id = k.id) o),
        w AS MATERIALIZED (SELECT q.env, q.id, q.f, q.old, q.before, n.new
            FROM q
            -- The purchase's first payment: the kept span's, else the latest earlier span's, else its first paid row.
            CROSS JOIN LATERAL (SELECT COALESCE(CASE WHEN (q.keep).starts_at IS NOT NULL THEN (q.keep).paid_since
                    ELSE q.since END, (SELECT v.purchase_date FROM revenue_transactions v
                    WHERE v.project_id = p_project_id AND v.original_transaction_id = q.id
                      AND v.environment = q.env AND NOT v.trial AND v.price_milli > 0
                    ORDER BY v.original_transaction_id, v.purchase_date LIMIT 1)) AS since) sn
            -- Earlier periods still running after p_from: only when the span before it runs past it, or ends at p_from
            -- where another begins (a later period there may hide an earlier one): the old spans cover every period,
            -- up to the same 400-day bound. The walk back stops at the latest row by which every row had ended
            -- (ended_max <= p_from; rows of its purchase date still read: their order is a tie).
            CROSS JOIN LATERAL (SELECT (q.keep).ends_at > q.f OR ((q.keep).ends_at = q.f
                AND (q.old[2]).starts_at = q.f) AS walks) wk
            LEFT JOIN LATERAL (SELECT v.purchase_date AS stop FROM revenue_transactions v
                WHERE wk.walks AND v.project_id = p_project_id AND v.original_transaction_id = q.id
                  AND v.purchase_date < q.f AND v.purchase_date > q.f - interval '400 days'
                  AND v.environment = q.env AND (v.ended_max IS NULL OR v.ended_max <= q.f)
                ORDER BY v.original_transaction_id DESC, v.purchase_date DESC LIMIT 1) st ON true
            CROSS JOIN LATERAL (SELECT CASE WHEN wk.walks THEN ARRAY(SELECT v.transaction_id FROM revenue_transactions v
                    WHERE v.project_id = p_project_id AND v.original_transaction_id = q.id
                      AND v.purchase_date < q.f AND v.purchase_date > q.f - interval '400 days'
                      AND v.purchase_date >= COALESCE(st.stop, '-infinity'::timestamptz) AND v.environment = q.env
                      AND v.type = 'Auto-Renewable Subscription' AND NOT v.trial AND v.price_milli > 0
                      AND v.expires_date IS NOT NULL AND LEAST(v.expires_date,
                          COALESCE(v.revocation_date, 'infinity'::timestamptz),
                          v.purchase_date + interval '400 days') > q.f
                    UNION ALL
                    SELECT v.transaction_id FROM revenue_transactions v
                    WHERE v.project_id = p_project_id AND v.original_transaction_id = q.id
                      AND v.environment = q.env AND v.refund_milli_percent >= 100000
                      AND v.purchase_date < q.f AND v.purchase_date > q.f - interval '400 days'
                      AND v.type = 'Auto-Renewable Subscription' AND NOT v.trial AND v.price_milli > 0
                      AND v.expires_date IS NOT NULL
                      AND LEAST(v.expires_date, COALESCE(v.revocation_date, 'infinity'::timestamptz)) > q.f)
                ELSE '{}' END AS ids) e
            -- The spans from p_from on: between consecutive period boundaries, the latest period covering the piece's
            -- start; pieces of one value that touch joined, and the first joined to the kept span when it continues
            -- its value. (Two reads, each by its own index: the rows from p_from on by the purchase's, the earlier
            -- ones by their keys.)
            CROSS JOIN LATERAL (
                WITH rt AS (SELECT v.* FROM revenue_transactions v
                        WHERE v.project_id = p_project_id AND v.original_transaction_id = q.id
                          AND v.purchase_date >= q.f AND v.environment = q.env
                        UNION ALL
                        SELECT v.* FROM revenue_transactions v
                        WHERE cardinality(e.ids) > 0 AND v.project_id = p_project_id AND v.environment = q.env
                          AND v.transaction_id = ANY (e.ids)),
                    p AS (SELECT rt.transaction_id AS id, rt.purchase_date AS s, LEAST(rt.expires_date,
                            COALESCE(rt.revocation_date, 'infinity'::timestamptz),
                            rt.purchase_date + interval '400 days') AS e,
                            rt.currency, bouncer_money_monthly(rt.price_milli, rt.purchase_date, rt.expires_date) AS m
                        FROM rt
                        WHERE rt.type = 'Auto-Renewable Subscription' AND NOT rt.trial AND rt.price_milli > 0
                          AND rt.expires_date IS NOT NULL),
                    x AS (SELECT GREATEST(p.s, q.f) AS x FROM p WHERE p.e > GREATEST(p.s, q.f)
                        UNION SELECT p.e FROM p WHERE p.e > GREATEST(p.s, q.f)),
                    k AS (SELECT x.x AS a, lead(x.x) OVER (ORDER BY x.x) AS z FROM x),
                    top AS (SELECT k.a, k.z, t.currency, t.m FROM k CROSS JOIN LATERAL (SELECT p.currency, p.m FROM p
                            WHERE p.s <= k.a AND p.e > k.a ORDER BY p.s DESC, p.id DESC LIMIT 1) t
                        WHERE k.z IS NOT NULL
                        UNION ALL
                        SELECT (q.keep).starts_at, q.f, (q.keep).currency, (q.keep).monthly_milli
                        WHERE (q.keep).starts_at IS NOT NULL),
                    b AS (SELECT top.*, CASE WHEN top.a = lag(top.z) OVER w AND top.currency = lag(top.currency) OVER w
                                AND top.m = lag(top.m) OVER w THEN 0 ELSE 1 END AS brk
                        FROM top WINDOW w AS (ORDER BY top.a)),
                    g AS (SELECT b.*, sum(b.brk) OVER (ORDER BY b.a) AS grp FROM b)
                SELECT array_agg(ROW(p_project_id, q.env, q.id, n.s, n.e, n.currency, n.m, sn.since)::revenue_values
                        ORDER BY n.s) AS new
                FROM (SELECT min(g.a) AS s, max(g.z) AS e, g.currency, g.m FROM g GROUP BY g.grp, g.currency, g.m) n
            ) n
            WHERE q.old IS DISTINCT FROM n.new)
    -- The changed purchases' spans before and after; those whose start is gone (removed), those new or changed
    -- (written: a span that keeps its start is updated in place, a renewal moves its end); mrr_movement's moves.
    SELECT (SELECT array_agg(o) FROM w, unnest(w.old) o),
        (SELECT array_agg(n) FROM w, unnest(w.new) n),
        (SELECT array_agg(o) FROM w, unnest(w.old) o
            WHERE o.starts_at <> ALL (ARRAY(SELECT n.starts_at FROM unnest(w.new) n))),
        (SELECT array_agg(n) FROM w, unnest(w.new) n WHERE NOT (n = ANY (COALESCE(w.old, '{}')))),
        (SELECT array_agg(m) FROM w,
            unnest(bouncer_revenue_movement_moves(p_project_id, w.env, w.f, w.before, w.old, w.new)) m)
    INTO v_old, v_new, v_gone, v_put, movement_days FROM (SELECT 1) one;
    movement_days := COALESCE(movement_days, '{}');
    IF v_old IS NULL AND v_new IS NULL THEN
        RETURN;
    END IF;
    IF v_gone IS NOT NULL THEN
        DELETE FROM revenue_values s USING unnest(v_gone) o
        WHERE s.project_id = p_project_id AND s.environment = o.environment
          AND s.original_transaction_id = o.original_transaction_id AND s.starts_at = o.starts_at;
    END IF;
    IF v_put IS NOT NULL THEN
        INSERT INTO revenue_values AS s SELECT n.* FROM unnest(v_put) n
        ON CONFLICT (project_id, environment, original_transaction_id, starts_at) DO UPDATE SET
            ends_at = EXCLUDED.ends_at, currency = EXCLUDED.currency, monthly_milli = EXCLUDED.monthly_milli,
            paid_since = EXCLUDED.paid_since;
    END IF;
    -- Each span counts +1 on the day that closes its start, −1 on the day that closes its end; a removed one the
    -- opposite.
    value_days := ARRAY(SELECT ROW(p_project_id, x.environment, x.day, x.currency, x.m, sum(x.n))::revenue_value_days
        FROM (SELECT o.environment, ((o.starts_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1 AS day,
                o.currency, o.monthly_milli AS m, -1 AS n FROM unnest(v_old) o
            UNION ALL SELECT o.environment, ((o.ends_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1,
                o.currency, o.monthly_milli, 1 FROM unnest(v_old) o
            UNION ALL SELECT n.environment, ((n.starts_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1,
                n.currency, n.monthly_milli, 1 FROM unnest(v_new) n
            UNION ALL SELECT n.environment, ((n.ends_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1,
                n.currency, n.monthly_milli, -1 FROM unnest(v_new) n) x
        GROUP BY x.environment, x.day, x.currency, x.m HAVING sum(x.n) <> 0);
END;
$$;
