-- Moves realized_ltv's roll-ups (schema/0086) by a batch of the project's revenue_transactions rows, p_signs[i] = +1
-- for a row written, −1 for the row it replaced or a row removed (bouncer_revenue_roll_up's revenue_days moves). A
-- purchase whose rows only gain amounts without an earlier first payment (a renewal, a refund: each row replaced by
-- one of the same transaction, purchase date and refund) moves its cohort's day rows by the difference and adds its
-- new days to its row: O(1) rows per changed transaction. Any other (a new purchase or currency, an earlier first
-- payment, a refund undone, a row removed) is synced whole with its customer (bouncer_revenue_ltv_resync). Called by
-- bouncer_revenue_roll_up once per batch, after its rows; never in the receipt's transaction.
-- Each read of a table is a probe by the purchase's key, so no plan (the deriver's are generic) ranges over the
-- project's rows; the batch's own amounts group by window and join by hash (a backfill's batch holds tens of
-- thousands: nested loops over them, as bouncer_revenue_roll_up's settings would have it, were quadratic).
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_move(p_project_id uuid, p_rows revenue_transactions[], p_signs int[])
RETURNS void
LANGUAGE plpgsql VOLATILE SET enable_hashjoin = on SET enable_nestloop = off AS $$
DECLARE
    r record;
    v_cohort date;
    v_kenvs text[] := '{}';
    v_kids text[] := '{}';
    v_kcurs text[] := '{}';
    v_cohorts date[] := '{}';
    v_days revenue_ltv_days[];
    v_envs text[];
    v_ids text[];
BEGIN
    IF COALESCE(cardinality(p_rows), 0) = 0 THEN
        RETURN;
    END IF;
    -- Each purchase and currency's row takes its new days and refunds, unless the batch moves its first payment
    -- earlier (one probe and an in-place update: a renewal's whole cost here besides its day row); a missing row,
    -- or one the batch moves earlier, has its purchase synced whole.
    FOR r IN
        SELECT e.environment, e.original_transaction_id, e.currency,
            COALESCE(min(e.purchase_date) FILTER (WHERE e.kind = 0 AND e.n > 0), 'infinity') AS first,
            COALESCE(array_agg(DISTINCT e.day) FILTER (WHERE e.kind = 0 AND e.n > 0), '{}') AS days,
            COALESCE(array_agg(DISTINCT e.refund_at) FILTER (WHERE e.kind = 1 AND e.n > 0), '{}') AS refunds
        FROM bouncer_revenue_ltv_entries(p_rows, p_signs) e
        GROUP BY 1, 2, 3
    LOOP
        v_cohort := NULL;
        UPDATE revenue_ltv_purchases lp SET
            days = ARRAY(SELECT DISTINCT x FROM unnest(lp.days || r.days) x ORDER BY x),
            refunds = ARRAY(SELECT DISTINCT x FROM unnest(lp.refunds || r.refunds) x ORDER BY x)
        WHERE lp.project_id = p_project_id AND lp.environment = r.environment
          AND lp.original_transaction_id = r.original_transaction_id AND lp.currency = r.currency
          AND lp.first_at <= r.first
        RETURNING lp.cohort_day INTO v_cohort;
        v_kenvs := v_kenvs || r.environment;
        v_kids := v_kids || r.original_transaction_id;
        v_kcurs := v_kcurs || r.currency;
        v_cohorts := v_cohorts || v_cohort;
    END LOOP;
    -- A purchase is synced whole when a row of it was not kept, or an amount goes without the same one coming back
    -- (a refund undone, a row removed); the others move their cohort's day rows by their amounts.
    WITH e AS (SELECT e.*, k.cohort_day FROM bouncer_revenue_ltv_entries(p_rows, p_signs) e
            LEFT JOIN unnest(v_kenvs, v_kids, v_kcurs, v_cohorts) k (env, id, currency, cohort_day)
                ON k.env = e.environment AND k.id = e.original_transaction_id AND k.currency = e.currency),
        g AS (SELECT e.*, bool_or(e.n < 0) OVER t AND NOT bool_or(e.n > 0) OVER t AS gone FROM e
            WINDOW t AS (PARTITION BY e.environment, e.transaction_id, e.kind, e.currency, e.purchase_date,
                e.refund_at)),
        w AS MATERIALIZED (SELECT g.*, bool_or(g.cohort_day IS NULL OR g.gone)
                OVER (PARTITION BY g.environment, g.original_transaction_id) AS whole
            FROM g)
    SELECT f.days, x.envs, x.ids INTO v_days, v_envs, v_ids
    FROM (SELECT array_agg(ROW(p_project_id, w.environment, w.cohort_day, w.day, w.currency, w.kind, w.price_milli,
                w.tier, w.refund_milli_percent, w.refund_at, w.n)::revenue_ltv_days) AS days FROM w WHERE NOT w.whole) f,
        (SELECT array_agg(y.environment ORDER BY y.environment, y.original_transaction_id) AS envs,
                array_agg(y.original_transaction_id ORDER BY y.environment, y.original_transaction_id) AS ids
            FROM (SELECT DISTINCT w.environment, w.original_transaction_id FROM w WHERE w.whole) y) x;
    IF v_days IS NOT NULL THEN
        PERFORM bouncer_revenue_ltv_days_add(p_project_id, v_days);
    END IF;
    IF v_ids IS NOT NULL THEN
        PERFORM bouncer_revenue_ltv_resync(p_project_id, v_envs, v_ids, p_rows, p_signs);
    END IF;
END;
$$;
