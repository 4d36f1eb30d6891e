-- Syncs realized_ltv's roll-ups (schema/0086) of whole purchases (p_envs[i], p_ids[i]) and of their customers, before
-- and after: each purchase's customer read again (the user holding it now, its latest binding not revoked, by
-- bound_at then user id, as 'u:' || user id; else the purchase itself, 'p:' || original transaction id; the chart's
-- statement under a filter says the same), its amounts taken out of the day rows as they were (its rows now, less
-- p_rows' difference: the batch's revenue_transactions moves, p_signs as bouncer_revenue_ltv_move's; none for a
-- purchase whose binding moved) and put back as they are, under its cohort now. With p_moved_only
-- (bouncer_revenue_ltv_rebind), only the purchases whose customer is another than their rows name.
-- A customer's other purchases are read only when its first payment may move: when a given purchase leaves it (or
-- changes) holding its first payment, or joins it with an earlier one. Otherwise its first payment stands
-- (revenue_ltv_customers, one probe) and a new purchase of a known customer reads nothing of its others: each of
-- them would leave the day rows as they are (the same cohort and no difference cancel: nothing written). The rows in
-- revenue_ltv_purchases and revenue_ltv_customers are written again where they changed.
-- No planner settings of its own (it runs under bouncer_revenue_roll_up's and under the deriver's alone): each read
-- of a table is a lateral probe by a purchase's or customer's key (OFFSET 0: never flattened into a join a plan could
-- turn into a range of the project's rows; Citus routes it to the tenant's worker whole), and the arrays are never
-- joined to each other: what one array says of another's rows (a purchase's customer, a customer's first payment, a
-- purchase's old and new cohort) is carried by windows over their union, linear in a backfill's thousands of
-- purchases whatever the join settings.
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_resync(p_project_id uuid, p_envs text[], p_ids text[],
    p_rows revenue_transactions[], p_signs int[], p_moved_only boolean) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    v_genvs text[];
    v_gids text[];
    v_gcus text[];
    v_penvs text[];
    v_pids text[];
    v_pcus text[];
    -- The customers concerned: their first payment now, and whether it may move (their other purchases read).
    v_cenvs text[];
    v_ccus text[];
    v_cfirsts timestamptz[];
    v_calls boolean[];
    v_old revenue_ltv_purchases[];
    v_cur revenue_transactions[];
    v_new revenue_ltv_purchases[];
    v_others revenue_ltv_purchases[];
BEGIN
    -- The given purchases with their customer now, and their rows (column by column: on Citus a whole row of a table
    -- is its shard's row type), which name the customer they had.
    SELECT array_agg(x.env) FILTER (WHERE x.first), array_agg(x.id) FILTER (WHERE x.first),
        array_agg(x.cu) FILTER (WHERE x.first),
        array_agg(ROW(p_project_id, x.env, x.id, x.currency, x.customer, x.cohort_day,
            x.first_at)::revenue_ltv_purchases) FILTER (WHERE x.currency IS NOT NULL)
    INTO v_genvs, v_gids, v_gcus, v_old
    FROM (SELECT g.env, g.id, COALESCE('u:' || s.user_id, 'p:' || g.id) AS cu, lp.currency, lp.customer, lp.cohort_day,
            lp.first_at, row_number() OVER w = 1 AS first, max(lp.customer) OVER w AS was
        FROM (SELECT DISTINCT k.env, k.id FROM unnest(p_envs, p_ids) k (env, id)) g
        LEFT JOIN LATERAL (SELECT s.user_id FROM subscriptions s
            WHERE s.project_id = p_project_id AND s.environment = g.env AND s.original_transaction_id = g.id
              AND s.revoked_at IS NULL
            ORDER BY s.bound_at DESC, s.user_id LIMIT 1) s ON true
        LEFT JOIN LATERAL (SELECT lp.currency, lp.customer, lp.cohort_day, lp.first_at FROM revenue_ltv_purchases lp
            WHERE lp.project_id = p_project_id AND lp.environment = g.env AND lp.original_transaction_id = g.id
            OFFSET 0) lp ON true
        WINDOW w AS (PARTITION BY g.env, g.id)) x
    WHERE NOT p_moved_only OR x.was IS DISTINCT FROM x.cu;
    IF v_gids IS NULL THEN
        RETURN;
    END IF;
    SELECT array_agg(ROW(v.*)::revenue_transactions) INTO v_cur
    FROM unnest(v_genvs, v_gids) k (env, id) CROSS JOIN LATERAL (SELECT v.* FROM revenue_transactions v
        WHERE v.project_id = p_project_id AND v.original_transaction_id = k.id AND v.environment = k.env
          AND v.price_milli > 0 OFFSET 0) v;
    -- The customers they had or have, each with its first payment; it may move when a given purchase held it (its
    -- old first_at at or before it) or brings an earlier one (a customer without a row has no other purchases).
    WITH cm AS (SELECT x.env, max(x.cu) OVER (PARTITION BY x.env, x.id) AS cu, x.first
            FROM (SELECT k.env, k.id, k.cu, NULL::timestamptz AS first
                FROM unnest(v_genvs, v_gids, v_gcus) k (env, id, cu)
                UNION ALL SELECT v.environment, v.original_transaction_id, NULL, v.purchase_date
                FROM unnest(v_cur) v) x),
        g AS (SELECT c.env, c.cu, min(c.gone) AS gone, min(c.came) AS came
            FROM (SELECT cm.env, cm.cu, NULL::timestamptz AS gone, cm.first AS came FROM cm
                UNION ALL SELECT o.environment, o.customer, o.first_at, NULL FROM unnest(v_old) o) c
            GROUP BY 1, 2)
    SELECT array_agg(g.env), array_agg(g.cu), array_agg(x.first_at),
        array_agg(COALESCE(g.gone <= x.first_at OR g.came < x.first_at, false))
    INTO v_cenvs, v_ccus, v_cfirsts, v_calls
    FROM g LEFT JOIN LATERAL (SELECT x.first_at FROM revenue_ltv_customers x
        WHERE x.project_id = p_project_id AND x.environment = g.env AND x.customer = g.cu OFFSET 0) x ON true;
    -- Every other purchase of a customer whose first payment may move, with its rows (it keeps its customer).
    WITH h AS (SELECT lp.environment, lp.original_transaction_id, lp.currency, lp.customer, lp.cohort_day, lp.first_at,
                false AS given
            FROM unnest(v_cenvs, v_ccus, v_calls) k (env, cu, moves) CROSS JOIN LATERAL (
                SELECT lp.* FROM revenue_ltv_purchases lp
                WHERE k.moves AND lp.project_id = p_project_id AND lp.environment = k.env AND lp.customer = k.cu
                OFFSET 0) lp
            UNION ALL SELECT k.env, k.id, NULL, NULL, NULL, NULL, true FROM unnest(v_genvs, v_gids) k (env, id)),
        o AS (SELECT h.*, bool_or(h.given) OVER (PARTITION BY h.environment, h.original_transaction_id) AS mine FROM h)
    SELECT array_agg(ROW(p_project_id, o.environment, o.original_transaction_id, o.currency, o.customer, o.cohort_day,
            o.first_at)::revenue_ltv_purchases)
    INTO v_others FROM o WHERE NOT o.mine;
    v_penvs := v_genvs;
    v_pids := v_gids;
    v_pcus := v_gcus;
    IF cardinality(v_others) > 0 THEN
        SELECT v_penvs || array_agg(o.environment), v_pids || array_agg(o.original_transaction_id),
            v_pcus || array_agg(o.customer)
        INTO v_penvs, v_pids, v_pcus
        FROM (SELECT DISTINCT o.environment, o.original_transaction_id, o.customer FROM unnest(v_others) o) o;
        v_old := COALESCE(v_old, '{}') || v_others;
        v_cur := COALESCE(v_cur, '{}') || ARRAY(SELECT ROW(v.*)::revenue_transactions
            FROM (SELECT DISTINCT o.environment, o.original_transaction_id FROM unnest(v_others) o) k
            CROSS JOIN LATERAL (SELECT v.* FROM revenue_transactions v
                WHERE v.project_id = p_project_id AND v.original_transaction_id = k.original_transaction_id
                  AND v.environment = k.environment AND v.price_milli > 0 OFFSET 0) v);
    END IF;
    -- Each purchase and currency as it is: its customer (carried from the purchase's own row of the union), its
    -- customer's first payment (a window over the customer's, with the first payment that stands) and its own.
    WITH e AS (SELECT e.environment AS env, e.original_transaction_id AS id, e.currency, e.kind, e.purchase_date,
                NULL::text AS cu
            FROM bouncer_revenue_ltv_entries(v_cur, NULL) e
            UNION ALL
            SELECT k.env, k.id, NULL, NULL, NULL, k.cu FROM unnest(v_penvs, v_pids, v_pcus) k (env, id, cu)),
        ec AS (SELECT e.*, max(e.cu) OVER (PARTITION BY e.env, e.id) AS customer FROM e),
        pc AS (SELECT ec.env, ec.id, ec.currency, ec.customer,
                min(ec.purchase_date) FILTER (WHERE ec.kind = 0) AS first_at
            FROM ec WHERE ec.kind IS NOT NULL
            GROUP BY 1, 2, 3, 4
            UNION ALL
            SELECT k.env, NULL, NULL, k.cu, k.first_at FROM unnest(v_cenvs, v_ccus, v_cfirsts, v_calls) k (env, cu,
                first_at, moves)
            WHERE k.first_at IS NOT NULL AND NOT k.moves)
    SELECT array_agg(ROW(p_project_id, x.env, x.id, x.currency, x.customer, (x.cf AT TIME ZONE 'UTC')::date,
            x.first_at)::revenue_ltv_purchases ORDER BY x.env, x.id, x.currency)
    INTO v_new
    FROM (SELECT pc.*, min(pc.first_at) OVER (PARTITION BY pc.env, pc.customer) AS cf FROM pc) x
    WHERE x.id IS NOT NULL;
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
                FROM unnest(v_genvs, v_gids) k (env, id)),
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
    -- The customers whose first payment may have moved: removed when no purchase is left to them; every customer's
    -- first payment written where it changed (one that stands is its own minimum).
    FOR r IN
        SELECT x.env, x.cu
        FROM (SELECT k.env, k.cu, 0 AS side
                FROM unnest(v_cenvs, v_ccus, v_cfirsts, v_calls) k (env, cu, first_at, moves)
                WHERE k.moves OR k.first_at IS NULL
            UNION ALL SELECT n.environment, n.customer, 1 FROM unnest(v_new) n) x
        GROUP BY 1, 2 HAVING max(x.side) = 0
    LOOP
        DELETE FROM revenue_ltv_customers x WHERE x.project_id = p_project_id AND x.environment = r.env
          AND x.customer = r.cu;
    END LOOP;
    INSERT INTO revenue_ltv_customers AS x (project_id, environment, customer, first_at)
    SELECT p_project_id, n.env, n.cu, min(n.first_at)
    FROM (SELECT n.environment AS env, n.customer AS cu, n.first_at FROM unnest(v_new) n
        UNION ALL SELECT k.env, k.cu, k.first_at FROM unnest(v_cenvs, v_ccus, v_cfirsts, v_calls) k (env, cu, first_at,
            moves)
        WHERE k.first_at IS NOT NULL AND NOT k.moves) n
    GROUP BY 1, 2, 3
    ON CONFLICT (project_id, environment, customer) DO UPDATE SET first_at = EXCLUDED.first_at
    WHERE x.first_at IS DISTINCT FROM EXCLUDED.first_at;
END;
$$;
