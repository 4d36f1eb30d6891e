-- Moves realized_ltv's roll-ups (schema/0086) by a batch of the project's revenue_transactions rows, p_signs[i] = +1
-- for a row written, −1 for the row it replaced or a row removed (bouncer_revenue_roll_up's revenue_days moves). A
-- purchase whose rows only gain amounts without an earlier first payment (a renewal, a refund: each row replaced by
-- one of the same transaction, purchase date and refund) moves its cohort's day rows by the difference, its row read
-- for the cohort (one probe) and not written: O(1) rows per changed transaction. Any other (a new purchase or currency, an earlier first
-- payment, a refund undone, a row removed) is synced whole with its customer (bouncer_revenue_ltv_resync). Called by
-- bouncer_revenue_roll_up once per batch, after its rows; never in the receipt's transaction.
-- No planner settings of its own and no join of two arrays: the batch's amounts are grouped by sorts and windows alone
-- (linear in the batch whatever the caller's settings: bouncer_revenue_roll_up's forbid hash joins), and each table is
-- read by its key, one purchase and currency at a time.
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_move(p_project_id uuid, p_rows revenue_transactions[], p_signs int[])
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    v_cohort date;
    -- The purchase being read (the loop's rows come by purchase) and its amounts so far, moved once it is done.
    v_env text;
    v_id text;
    v_whole boolean := false;
    v_pending revenue_ltv_days[] := '{}';
    v_days revenue_ltv_days[] := '{}';
    v_envs text[] := '{}';
    v_ids text[] := '{}';
BEGIN
    IF COALESCE(cardinality(p_rows), 0) = 0 THEN
        RETURN;
    END IF;
    -- Per purchase and currency: its earliest new sale, its amounts (the difference, cohort left out) and whether the
    -- purchase loses an amount that does not come back (gone: synced whole).
    FOR r IN
        WITH e AS (SELECT e.*, bool_or(e.n < 0) OVER t AND NOT bool_or(e.n > 0) OVER t AS gone
                FROM bouncer_revenue_ltv_entries(p_rows, p_signs) e
                WINDOW t AS (PARTITION BY e.environment, e.transaction_id, e.kind, e.currency, e.purchase_date,
                    e.refund_at)),
            g AS (SELECT e.environment, e.original_transaction_id, e.currency,
                    COALESCE(min(e.purchase_date) FILTER (WHERE e.kind = 0 AND e.n > 0), 'infinity') AS first,
                    array_agg(ROW(p_project_id, e.environment, NULL, e.day, e.currency, e.kind, e.price_milli, e.tier,
                        e.refund_milli_percent, e.refund_at, e.n)::revenue_ltv_days) AS amounts,
                    bool_or(e.gone) AS gone
                FROM e GROUP BY 1, 2, 3)
        SELECT g.*, bool_or(g.gone) OVER (PARTITION BY g.environment, g.original_transaction_id) AS whole FROM g
        -- (A last row of NULLs ends the last purchase.)
        UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL
        ORDER BY 1, 2, 3
    LOOP
        IF v_id IS DISTINCT FROM r.original_transaction_id OR v_env IS DISTINCT FROM r.environment THEN
            IF v_whole THEN
                v_envs := v_envs || v_env;
                v_ids := v_ids || v_id;
            ELSE
                v_days := v_days || v_pending;
            END IF;
            v_env := r.environment;
            v_id := r.original_transaction_id;
            v_whole := r.whole;
            v_pending := '{}';
        END IF;
        EXIT WHEN r.original_transaction_id IS NULL;
        CONTINUE WHEN v_whole;
        -- Its cohort, unless the batch moves its first payment earlier (one probe: a renewal's whole cost here besides
        -- its day row); a missing row, or one the batch moves earlier, has its purchase synced whole.
        v_cohort := NULL;
        SELECT lp.cohort_day INTO v_cohort FROM revenue_ltv_purchases lp
        WHERE lp.project_id = p_project_id AND lp.environment = r.environment
          AND lp.original_transaction_id = r.original_transaction_id AND lp.currency = r.currency
          AND lp.first_at <= r.first;
        IF v_cohort IS NULL THEN
            v_whole := true;
        ELSE
            v_pending := v_pending || ARRAY(SELECT ROW(a.project_id, a.environment, v_cohort, a.day, a.currency, a.kind,
                a.price_milli, a.tier, a.refund_milli_percent, a.refund_at, a.n)::revenue_ltv_days
                FROM unnest(r.amounts) a);
        END IF;
    END LOOP;
    IF cardinality(v_days) > 0 THEN
        PERFORM bouncer_revenue_ltv_days_add(p_project_id, v_days);
    END IF;
    IF cardinality(v_ids) > 0 THEN
        PERFORM bouncer_revenue_ltv_resync(p_project_id, v_envs, v_ids, p_rows, p_signs, false);
    END IF;
END;
$$;
