-- Syncs realized_ltv's roll-ups (schema/0086) of whole purchases (p_envs[i], p_ids[i]) and of their customers, before
-- and after: each purchase's customer read again (bouncer_revenue_ltv_customer), each customer's first payment again
-- from the purchases they hold, and every purchase of those customers whose amounts or cohort moved taken out of the
-- day rows as it was (its rows now, less p_rows' difference: the batch's revenue_transactions moves, p_signs as
-- bouncer_revenue_ltv_move's; none for a purchase whose binding moved) and put back as it is, under its cohort now.
-- Its rows in revenue_ltv_purchases and revenue_ltv_customers are written again. Reads the customers' purchases
-- whole: a new purchase, an earlier first payment, a binding that moves (bouncer_revenue_ltv_rebind).
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_resync(p_project_id uuid, p_envs text[], p_ids text[],
    p_rows revenue_transactions[], p_signs int[]) RETURNS void
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    v_penvs text[];
    v_pids text[];
    v_pcus text[];
    v_old revenue_ltv_purchases[];
    v_cur revenue_transactions[];
    v_new revenue_ltv_purchases[];
BEGIN
    -- The purchases: the given ones with their customer now, and every purchase held by a customer they had or have.
    WITH g AS (SELECT DISTINCT k.env, k.id FROM unnest(p_envs, p_ids) k (env, id)),
        gc AS (SELECT g.env, g.id, bouncer_revenue_ltv_customer(p_project_id, g.env, g.id) AS cu FROM g),
        c AS (SELECT gc.env, gc.cu FROM gc
            UNION SELECT lp.environment, lp.customer FROM revenue_ltv_purchases lp JOIN g
                ON lp.project_id = p_project_id AND lp.environment = g.env AND lp.original_transaction_id = g.id),
        p AS (SELECT gc.env, gc.id, gc.cu FROM gc
            UNION SELECT lp.environment, lp.original_transaction_id, lp.customer
            FROM revenue_ltv_purchases lp JOIN c ON lp.project_id = p_project_id AND lp.environment = c.env
                AND lp.customer = c.cu
            WHERE NOT EXISTS (SELECT 1 FROM g WHERE g.env = lp.environment AND g.id = lp.original_transaction_id))
    SELECT array_agg(p.env), array_agg(p.id), array_agg(p.cu) INTO v_penvs, v_pids, v_pcus FROM p;
    SELECT array_agg(lp ORDER BY lp.environment, lp.original_transaction_id, lp.currency) INTO v_old
    FROM revenue_ltv_purchases lp JOIN unnest(v_penvs, v_pids) k (env, id) ON lp.project_id = p_project_id
        AND lp.environment = k.env AND lp.original_transaction_id = k.id;
    SELECT array_agg(v) INTO v_cur
    FROM revenue_transactions v JOIN unnest(v_penvs, v_pids) k (env, id) ON v.project_id = p_project_id
        AND v.original_transaction_id = k.id AND v.environment = k.env
    WHERE v.price_milli > 0;
    -- Each purchase and currency as it is: its customer's first payment, its own, its days and refunds.
    WITH e AS MATERIALIZED (SELECT * FROM bouncer_revenue_ltv_entries(v_cur, NULL)),
        k AS (SELECT * FROM unnest(v_penvs, v_pids, v_pcus) k (env, id, cu)),
        pc AS (SELECT e.environment, e.original_transaction_id, e.currency, k.cu,
                min(e.purchase_date) FILTER (WHERE e.kind = 0) AS first_at,
                ARRAY(SELECT DISTINCT x FROM unnest(array_agg(e.day) FILTER (WHERE e.kind = 0)) x ORDER BY x) AS days,
                ARRAY(SELECT DISTINCT x FROM unnest(array_agg(e.refund_at) FILTER (WHERE e.kind = 1)) x ORDER BY x)
                    AS refunds
            FROM e JOIN k ON k.env = e.environment AND k.id = e.original_transaction_id
            GROUP BY 1, 2, 3, 4),
        cf AS (SELECT pc.environment, pc.cu, min(pc.first_at) AS first_at FROM pc GROUP BY 1, 2)
    SELECT array_agg(ROW(p_project_id, pc.environment, pc.original_transaction_id, pc.currency, pc.cu,
            (cf.first_at AT TIME ZONE 'UTC')::date, pc.first_at, pc.days, pc.refunds)::revenue_ltv_purchases
        ORDER BY pc.environment, pc.original_transaction_id, pc.currency)
    INTO v_new
    FROM pc JOIN cf ON cf.environment = pc.environment AND cf.cu = pc.cu;
    -- The day rows: each purchase as it was out (its rows now less the batch's difference, under its old cohort),
    -- as it is in (under its new one); a purchase whose cohort stayed and that had no difference cancels.
    PERFORM bouncer_revenue_ltv_days_add(p_project_id, ARRAY(
        SELECT ROW(p_project_id, x.environment, x.cohort_day, x.day, x.currency, x.kind, x.price_milli, x.tier,
                x.refund_milli_percent, x.refund_at, x.n)::revenue_ltv_days
        FROM (SELECT e.environment, o.cohort_day, e.day, e.currency, e.kind, e.price_milli, e.tier,
                    e.refund_milli_percent, e.refund_at, - e.n AS n
                FROM bouncer_revenue_ltv_entries(v_cur, NULL) e
                LEFT JOIN (SELECT DISTINCT o.environment, o.original_transaction_id, o.cohort_day FROM unnest(v_old) o) o
                    ON o.environment = e.environment AND o.original_transaction_id = e.original_transaction_id
            UNION ALL
            SELECT e.environment, o.cohort_day, e.day, e.currency, e.kind, e.price_milli, e.tier,
                    e.refund_milli_percent, e.refund_at, e.n
                FROM bouncer_revenue_ltv_entries(p_rows, p_signs) e
                JOIN unnest(v_penvs, v_pids) k (env, id) ON k.env = e.environment AND k.id = e.original_transaction_id
                LEFT JOIN (SELECT DISTINCT o.environment, o.original_transaction_id, o.cohort_day FROM unnest(v_old) o) o
                    ON o.environment = e.environment AND o.original_transaction_id = e.original_transaction_id
            UNION ALL
            SELECT e.environment, n.cohort_day, e.day, e.currency, e.kind, e.price_milli, e.tier,
                    e.refund_milli_percent, e.refund_at, e.n
                FROM bouncer_revenue_ltv_entries(v_cur, NULL) e
                JOIN (SELECT DISTINCT n.environment, n.original_transaction_id, n.cohort_day FROM unnest(v_new) n) n
                    ON n.environment = e.environment AND n.original_transaction_id = e.original_transaction_id) x));
    -- The purchases' rows: gone ones removed, changed ones written.
    DELETE FROM revenue_ltv_purchases lp USING unnest(v_old) o
    WHERE lp.project_id = p_project_id AND lp.environment = o.environment
      AND lp.original_transaction_id = o.original_transaction_id AND lp.currency = o.currency
      AND NOT EXISTS (SELECT 1 FROM unnest(v_new) n WHERE n.environment = o.environment
          AND n.original_transaction_id = o.original_transaction_id AND n.currency = o.currency);
    INSERT INTO revenue_ltv_purchases AS lp SELECT n.* FROM unnest(v_new) n WHERE NOT (n = ANY (COALESCE(v_old, '{}')))
    ON CONFLICT (project_id, environment, original_transaction_id, currency) DO UPDATE SET
        customer = EXCLUDED.customer, cohort_day = EXCLUDED.cohort_day, first_at = EXCLUDED.first_at,
        days = EXCLUDED.days, refunds = EXCLUDED.refunds;
    -- The customers, before and after: their first payment, or none left.
    WITH c AS (SELECT DISTINCT o.environment AS env, o.customer AS cu FROM unnest(v_old) o
            UNION SELECT k.env, k.cu FROM unnest(v_penvs, v_pcus) k (env, cu)),
        f AS (SELECT c.env, c.cu, (SELECT min(n.first_at) FROM unnest(v_new) n
                WHERE n.environment = c.env AND n.customer = c.cu) AS first_at FROM c),
        gone AS (DELETE FROM revenue_ltv_customers x USING f WHERE f.first_at IS NULL AND x.project_id = p_project_id
            AND x.environment = f.env AND x.customer = f.cu RETURNING 1)
    INSERT INTO revenue_ltv_customers AS x (project_id, environment, customer, first_at)
    SELECT p_project_id, f.env, f.cu, f.first_at FROM f WHERE f.first_at IS NOT NULL
    ON CONFLICT (project_id, environment, customer) DO UPDATE SET first_at = EXCLUDED.first_at
    WHERE x.first_at IS DISTINCT FROM EXCLUDED.first_at;
END;
$$;
