-- Syncs realized_ltv's roll-ups (schema/0086) of whole purchases (p_envs[i], p_ids[i]) and of their customers, before
-- and after: each purchase's customer read again (bouncer_revenue_ltv_customer), each customer's first payment again
-- from the purchases they hold, and every purchase of those customers taken out of the day rows as it was (its rows
-- now, less p_rows' difference: the batch's revenue_transactions moves, p_signs as bouncer_revenue_ltv_move's; none
-- for a purchase whose binding moved) and put back as it is, under its cohort now (the same cohort and no difference
-- cancel: nothing written). Its rows in revenue_ltv_purchases and revenue_ltv_customers are written again where they
-- changed. Reads the customers' purchases whole: a new purchase, an earlier first payment, a binding that moves
-- (bouncer_revenue_ltv_rebind).
-- Each read of a table is a nested loop of probes by a purchase's or customer's key (the function's settings, as
-- bouncer_revenue_roll_up's), so no plan (the deriver's are generic) ranges over the project's rows, and Citus routes
-- it to the tenant's worker whole; the statements over the arrays read join by hash instead (set for them alone: a
-- backfill's batch holds thousands of purchases, and nested loops over them were quadratic).
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_resync(p_project_id uuid, p_envs text[], p_ids text[],
    p_rows revenue_transactions[], p_signs int[]) RETURNS void
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
    SET enable_nestloop = on AS $$
DECLARE
    r record;
    v_penvs text[];
    v_pids text[];
    v_pcus text[];
    v_old revenue_ltv_purchases[];
    v_cur revenue_transactions[];
    v_new revenue_ltv_purchases[];
BEGIN
    -- The given purchases with their customer now (a statement of its own: on Citus a function reading a tenant table
    -- inside a statement routed to the tenant's worker would be a nested distributed query).
    SELECT array_agg(g.env), array_agg(g.id), array_agg(bouncer_revenue_ltv_customer(p_project_id, g.env, g.id))
    INTO v_penvs, v_pids, v_pcus
    FROM (SELECT DISTINCT k.env, k.id FROM unnest(p_envs, p_ids) k (env, id)) g;
    -- And every purchase held by a customer they had or have.
    WITH g AS (SELECT k.env, k.id FROM unnest(v_penvs, v_pids) k (env, id)),
        gc AS (SELECT * FROM unnest(v_penvs, v_pids, v_pcus) k (env, id, cu)),
        c AS (SELECT gc.env, gc.cu FROM gc
            UNION SELECT lp.environment, lp.customer FROM g JOIN revenue_ltv_purchases lp
                ON lp.project_id = p_project_id AND lp.environment = g.env AND lp.original_transaction_id = g.id),
        h AS (SELECT DISTINCT lp.environment, lp.original_transaction_id, lp.customer
            FROM c JOIN revenue_ltv_purchases lp ON lp.project_id = p_project_id AND lp.environment = c.env
                AND lp.customer = c.cu),
        p AS (SELECT gc.env, gc.id, gc.cu FROM gc
            UNION ALL
            SELECT h.environment, h.original_transaction_id, h.customer FROM h
            LEFT JOIN g ON g.env = h.environment AND g.id = h.original_transaction_id WHERE g.id IS NULL)
    SELECT array_agg(p.env), array_agg(p.id), array_agg(p.cu) INTO v_penvs, v_pids, v_pcus FROM p;
    -- (Column by column: on Citus a whole row of a table is its shard's row type.)
    SELECT array_agg(ROW(lp.*)::revenue_ltv_purchases) INTO v_old
    FROM unnest(v_penvs, v_pids) k (env, id) JOIN revenue_ltv_purchases lp ON lp.project_id = p_project_id
        AND lp.environment = k.env AND lp.original_transaction_id = k.id;
    SELECT array_agg(ROW(v.*)::revenue_transactions) INTO v_cur
    FROM unnest(v_penvs, v_pids) k (env, id) JOIN revenue_transactions v ON v.project_id = p_project_id
        AND v.original_transaction_id = k.id AND v.environment = k.env AND v.price_milli > 0;
    -- The statements below join arrays alone (their writes probe keys): hash joins.
    PERFORM set_config('enable_hashjoin', 'on', true), set_config('enable_nestloop', 'off', true);
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
    -- as it is in (under its new one).
    PERFORM bouncer_revenue_ltv_days_add(p_project_id, ARRAY(
        WITH o AS (SELECT DISTINCT o.environment, o.original_transaction_id, o.cohort_day FROM unnest(v_old) o),
            n AS (SELECT DISTINCT n.environment, n.original_transaction_id, n.cohort_day FROM unnest(v_new) n),
            k AS (SELECT DISTINCT k.env, k.id FROM unnest(v_penvs, v_pids) k (env, id))
        SELECT ROW(p_project_id, x.environment, x.cohort_day, x.day, x.currency, x.kind, x.price_milli, x.tier,
                x.refund_milli_percent, x.refund_at, x.n)::revenue_ltv_days
        FROM (SELECT e.environment, o.cohort_day, e.day, e.currency, e.kind, e.price_milli, e.tier,
                    e.refund_milli_percent, e.refund_at, - e.n AS n
                FROM bouncer_revenue_ltv_entries(v_cur, NULL) e
                JOIN o ON o.environment = e.environment AND o.original_transaction_id = e.original_transaction_id
            UNION ALL
            SELECT e.environment, o.cohort_day, e.day, e.currency, e.kind, e.price_milli, e.tier,
                    e.refund_milli_percent, e.refund_at, e.n
                FROM bouncer_revenue_ltv_entries(p_rows, p_signs) e
                JOIN k ON k.env = e.environment AND k.id = e.original_transaction_id
                JOIN o ON o.environment = e.environment AND o.original_transaction_id = e.original_transaction_id
            UNION ALL
            SELECT e.environment, n.cohort_day, e.day, e.currency, e.kind, e.price_milli, e.tier,
                    e.refund_milli_percent, e.refund_at, e.n
                FROM bouncer_revenue_ltv_entries(v_cur, NULL) e
                JOIN n ON n.environment = e.environment AND n.original_transaction_id = e.original_transaction_id) x));
    -- The purchases' rows: gone ones removed, changed ones written (each by its key).
    FOR r IN
        SELECT o.environment, o.original_transaction_id, o.currency FROM unnest(v_old) o
        LEFT JOIN unnest(v_new) n ON n.environment = o.environment
            AND n.original_transaction_id = o.original_transaction_id AND n.currency = o.currency
        WHERE n.currency IS NULL
    LOOP
        DELETE FROM revenue_ltv_purchases lp WHERE lp.project_id = p_project_id AND lp.environment = r.environment
          AND lp.original_transaction_id = r.original_transaction_id AND lp.currency = r.currency;
    END LOOP;
    INSERT INTO revenue_ltv_purchases AS lp
    SELECT n.* FROM unnest(v_new) n
    LEFT JOIN unnest(v_old) o ON o.environment = n.environment
        AND o.original_transaction_id = n.original_transaction_id AND o.currency = n.currency
    WHERE o IS DISTINCT FROM n
    ON CONFLICT (project_id, environment, original_transaction_id, currency) DO UPDATE SET
        customer = EXCLUDED.customer, cohort_day = EXCLUDED.cohort_day, first_at = EXCLUDED.first_at,
        days = EXCLUDED.days, refunds = EXCLUDED.refunds;
    -- The customers, before and after: their first payment, or none left.
    FOR r IN
        WITH c AS (SELECT o.environment AS env, o.customer AS cu FROM unnest(v_old) o
                UNION SELECT k.env, k.cu FROM unnest(v_penvs, v_pcus) k (env, cu)),
            f AS (SELECT n.environment AS env, n.customer AS cu, min(n.first_at) AS first_at FROM unnest(v_new) n
                GROUP BY 1, 2)
        SELECT c.env, c.cu FROM c LEFT JOIN f ON f.env = c.env AND f.cu = c.cu WHERE f.cu IS NULL
    LOOP
        DELETE FROM revenue_ltv_customers x WHERE x.project_id = p_project_id AND x.environment = r.env
          AND x.customer = r.cu;
    END LOOP;
    INSERT INTO revenue_ltv_customers AS x (project_id, environment, customer, first_at)
    SELECT p_project_id, n.environment, n.customer, min(n.first_at) FROM unnest(v_new) n GROUP BY 1, 2, 3
    ON CONFLICT (project_id, environment, customer) DO UPDATE SET first_at = EXCLUDED.first_at
    WHERE x.first_at IS DISTINCT FROM EXCLUDED.first_at;
END;
$$;
