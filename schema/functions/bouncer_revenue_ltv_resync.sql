-- Syncs realized_ltv's roll-ups (schema/0086) of whole purchases (p_envs[i], p_ids[i]) and of their customers, before
-- and after: each purchase's customer read again (bouncer_revenue_ltv_customer), each customer's first payment again
-- from the purchases they hold, and every purchase of those customers taken out of the day rows as it was (its rows
-- now, less p_rows' difference: the batch's revenue_transactions moves, p_signs as bouncer_revenue_ltv_move's; none
-- for a purchase whose binding moved) and put back as it is, under its cohort now (the same cohort and no difference
-- cancel: nothing written). Its rows in revenue_ltv_purchases and revenue_ltv_customers are written again where they
-- changed. Reads the customers' purchases whole: a new purchase, an earlier first payment, a binding that moves
-- (bouncer_revenue_ltv_rebind).
-- No planner settings of its own (it runs under bouncer_revenue_roll_up's and under the deriver's alone): each read
-- of a table is a lateral probe by a purchase's or customer's key (OFFSET 0: never flattened into a join a plan could
-- turn into a range of the project's rows; Citus routes it to the tenant's worker whole), and the arrays are never
-- joined to each other: what one array says of another's rows (a purchase's customer, a customer's first payment, a
-- purchase's old and new cohort) is carried by windows over their union, linear in a backfill's thousands of
-- purchases whatever the join settings.
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_resync(p_project_id uuid, p_envs text[], p_ids text[],
    p_rows revenue_transactions[], p_signs int[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
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
    -- And every purchase held by a customer they had or have (a given purchase keeps its customer now).
    WITH gc AS (SELECT * FROM unnest(v_penvs, v_pids, v_pcus) k (env, id, cu)),
        c AS (SELECT gc.env, gc.cu FROM gc
            UNION SELECT gc.env, lp.customer FROM gc CROSS JOIN LATERAL (SELECT lp.customer FROM revenue_ltv_purchases lp
                WHERE lp.project_id = p_project_id AND lp.environment = gc.env AND lp.original_transaction_id = gc.id
                OFFSET 0) lp),
        h AS (SELECT c.env, lp.original_transaction_id AS id, c.cu FROM c CROSS JOIN LATERAL (
                SELECT lp.original_transaction_id FROM revenue_ltv_purchases lp
                WHERE lp.project_id = p_project_id AND lp.environment = c.env AND lp.customer = c.cu OFFSET 0) lp),
        p AS (SELECT DISTINCT ON (x.env, x.id) x.env, x.id, x.cu
            FROM (SELECT gc.env, gc.id, gc.cu, 0 AS o FROM gc UNION ALL SELECT h.env, h.id, h.cu, 1 FROM h) x
            ORDER BY x.env, x.id, x.o)
    SELECT array_agg(p.env), array_agg(p.id), array_agg(p.cu) INTO v_penvs, v_pids, v_pcus FROM p;
    -- (Column by column: on Citus a whole row of a table is its shard's row type.)
    SELECT array_agg(ROW(lp.*)::revenue_ltv_purchases) INTO v_old
    FROM unnest(v_penvs, v_pids) k (env, id) CROSS JOIN LATERAL (SELECT lp.* FROM revenue_ltv_purchases lp
        WHERE lp.project_id = p_project_id AND lp.environment = k.env AND lp.original_transaction_id = k.id OFFSET 0) lp;
    SELECT array_agg(ROW(v.*)::revenue_transactions) INTO v_cur
    FROM unnest(v_penvs, v_pids) k (env, id) CROSS JOIN LATERAL (SELECT v.* FROM revenue_transactions v
        WHERE v.project_id = p_project_id AND v.original_transaction_id = k.id AND v.environment = k.env
          AND v.price_milli > 0 OFFSET 0) v;
    -- Each purchase and currency as it is: its customer (carried from the purchase's own row of the union), its
    -- customer's first payment (a window over the customer's) and its own.
    WITH e AS (SELECT e.environment AS env, e.original_transaction_id AS id, e.currency, e.kind, e.purchase_date,
                e.day, e.refund_at, NULL::text AS cu
            FROM bouncer_revenue_ltv_entries(v_cur, NULL) e
            UNION ALL
            SELECT k.env, k.id, NULL, NULL, NULL, NULL, NULL, k.cu FROM unnest(v_penvs, v_pids, v_pcus) k (env, id, cu)),
        ec AS (SELECT e.*, max(e.cu) OVER (PARTITION BY e.env, e.id) AS customer FROM e),
        pc AS (SELECT ec.env, ec.id, ec.currency, ec.customer,
                min(ec.purchase_date) FILTER (WHERE ec.kind = 0) AS first_at
            FROM ec WHERE ec.kind IS NOT NULL
            GROUP BY 1, 2, 3, 4)
    SELECT array_agg(ROW(p_project_id, x.env, x.id, x.currency, x.customer, (x.cf AT TIME ZONE 'UTC')::date,
            x.first_at)::revenue_ltv_purchases ORDER BY x.env, x.id, x.currency)
    INTO v_new
    FROM (SELECT pc.*, min(pc.first_at) OVER (PARTITION BY pc.env, pc.customer) AS cf FROM pc) x;
    -- The day rows: each purchase as it was out (its rows now less the batch's difference, under its old cohort), as
    -- it is in (under its new one); the cohorts carried to the amounts by windows over the union of both.
    PERFORM bouncer_revenue_ltv_days_add(p_project_id, ARRAY(
        WITH a AS (SELECT e.environment AS env, e.original_transaction_id AS id, 0 AS side, e.day, e.currency, e.kind,
                    e.price_milli, e.tier, e.refund_milli_percent, e.refund_at, - e.n AS n, NULL::date AS old,
                    NULL::date AS new, false AS given
                FROM bouncer_revenue_ltv_entries(v_cur, NULL) e
                UNION ALL
                SELECT e.environment, e.original_transaction_id, 1, e.day, e.currency, e.kind, e.price_milli, e.tier,
                    e.refund_milli_percent, e.refund_at, e.n, NULL, NULL, false
                FROM bouncer_revenue_ltv_entries(p_rows, p_signs) e
                UNION ALL
                SELECT e.environment, e.original_transaction_id, 3, e.day, e.currency, e.kind, e.price_milli, e.tier,
                    e.refund_milli_percent, e.refund_at, e.n, NULL, NULL, false
                FROM bouncer_revenue_ltv_entries(v_cur, NULL) e
                UNION ALL
                SELECT o.environment, o.original_transaction_id, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                    o.cohort_day, NULL, false FROM unnest(v_old) o
                UNION ALL
                SELECT n.environment, n.original_transaction_id, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                    NULL, n.cohort_day, false FROM unnest(v_new) n
                UNION ALL
                SELECT k.env, k.id, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, true
                FROM unnest(v_penvs, v_pids) k (env, id)),
            w AS (SELECT a.*, max(a.old) OVER k AS o, max(a.new) OVER k AS c, bool_or(a.given) OVER k AS mine
                FROM a WINDOW k AS (PARTITION BY a.env, a.id))
        -- Out (0) and the batch's difference (1, the given purchases') under the old cohort, in (3) under the new.
        SELECT ROW(p_project_id, w.env, CASE WHEN w.side = 3 THEN w.c ELSE w.o END, w.day, w.currency, w.kind,
                w.price_milli, w.tier, w.refund_milli_percent, w.refund_at, w.n)::revenue_ltv_days
        FROM w WHERE w.side IN (0, 3) OR (w.side = 1 AND w.mine)));
    -- The purchases' rows: gone ones removed, changed ones written (each by its key).
    FOR r IN
        SELECT x.environment, x.original_transaction_id, x.currency
        FROM (SELECT o.environment, o.original_transaction_id, o.currency, 0 AS side FROM unnest(v_old) o
            UNION ALL SELECT n.environment, n.original_transaction_id, n.currency, 1 FROM unnest(v_new) n) x
        GROUP BY 1, 2, 3 HAVING max(x.side) = 0
    LOOP
        DELETE FROM revenue_ltv_purchases lp WHERE lp.project_id = p_project_id AND lp.environment = r.environment
          AND lp.original_transaction_id = r.original_transaction_id AND lp.currency = r.currency;
    END LOOP;
    INSERT INTO revenue_ltv_purchases AS lp
    SELECT (x.r).* FROM (SELECT n AS r, 1 AS side FROM unnest(v_new) n UNION ALL SELECT o, 0 FROM unnest(v_old) o) x
    GROUP BY x.r HAVING min(x.side) = 1
    ON CONFLICT (project_id, environment, original_transaction_id, currency) DO UPDATE SET
        customer = EXCLUDED.customer, cohort_day = EXCLUDED.cohort_day, first_at = EXCLUDED.first_at;
    -- The customers, before and after: their first payment, or none left.
    FOR r IN
        SELECT x.env, x.cu
        FROM (SELECT o.environment AS env, o.customer AS cu, 0 AS side FROM unnest(v_old) o
            UNION ALL SELECT k.env, k.cu, 0 FROM unnest(v_penvs, v_pcus) k (env, cu)
            UNION ALL SELECT n.environment, n.customer, 1 FROM unnest(v_new) n) x
        GROUP BY 1, 2 HAVING max(x.side) = 0
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
