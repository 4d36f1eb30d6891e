-- Moves realized_ltv's roll-ups (schema/0086) by a batch of the project's revenue_transactions rows, p_signs[i] = +1
-- for a row written, −1 for the row it replaced or a row removed (bouncer_revenue_roll_up's revenue_days moves). A
-- purchase whose rows only gain amounts without an earlier first payment (a renewal, a refund: each row replaced by
-- one of the same transaction, purchase date and refund) moves its cohort's day rows by the difference and adds its
-- new days to its row: O(1) rows per changed transaction. Any other (a new purchase or currency, an earlier first
-- payment, a refund undone, a row removed) is synced whole with its customer (bouncer_revenue_ltv_resync). Called by
-- bouncer_revenue_roll_up once per batch, after its rows; never in the receipt's transaction.
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_move(p_project_id uuid, p_rows revenue_transactions[], p_signs int[])
RETURNS void
-- A batch's purchases are few of the project's: every statement probes them by index (as bouncer_revenue_roll_up).
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    v_envs text[];
    v_ids text[];
BEGIN
    IF COALESCE(cardinality(p_rows), 0) = 0 THEN
        RETURN;
    END IF;
    -- The purchases that need a whole sync.
    WITH e AS MATERIALIZED (SELECT * FROM bouncer_revenue_ltv_entries(p_rows, p_signs)),
        s AS (SELECT e.environment, e.original_transaction_id, lp.project_id IS NULL
                OR (e.kind = 0 AND e.n > 0 AND e.purchase_date < lp.first_at)
                OR (e.n < 0 AND NOT EXISTS (SELECT 1 FROM e f WHERE f.n > 0 AND f.environment = e.environment
                    AND f.transaction_id = e.transaction_id AND f.kind = e.kind AND f.currency = e.currency
                    AND f.purchase_date = e.purchase_date AND f.refund_at = e.refund_at)) AS whole
            FROM e LEFT JOIN revenue_ltv_purchases lp ON lp.project_id = p_project_id
                AND lp.environment = e.environment AND lp.original_transaction_id = e.original_transaction_id
                AND lp.currency = e.currency)
    SELECT array_agg(w.environment), array_agg(w.original_transaction_id) INTO v_envs, v_ids
    FROM (SELECT s.environment, s.original_transaction_id FROM s GROUP BY 1, 2 HAVING bool_or(s.whole)) w;
    -- The others: their amounts under their cohort, their new days and refunds on their rows.
    PERFORM bouncer_revenue_ltv_days_add(p_project_id, ARRAY(
        SELECT ROW(p_project_id, e.environment, lp.cohort_day, e.day, e.currency, e.kind, e.price_milli, e.tier,
                e.refund_milli_percent, e.refund_at, e.n)::revenue_ltv_days
        FROM bouncer_revenue_ltv_entries(p_rows, p_signs) e
        JOIN revenue_ltv_purchases lp ON lp.project_id = p_project_id AND lp.environment = e.environment
            AND lp.original_transaction_id = e.original_transaction_id AND lp.currency = e.currency
        WHERE NOT EXISTS (SELECT 1 FROM unnest(v_envs, v_ids) w (env, id)
            WHERE w.env = e.environment AND w.id = e.original_transaction_id)));
    UPDATE revenue_ltv_purchases lp SET
        days = ARRAY(SELECT DISTINCT x FROM unnest(lp.days || a.days) x ORDER BY x),
        refunds = ARRAY(SELECT DISTINCT x FROM unnest(lp.refunds || a.refunds) x ORDER BY x)
    FROM (SELECT e.environment, e.original_transaction_id, e.currency,
            COALESCE(array_agg(DISTINCT e.day) FILTER (WHERE e.kind = 0), '{}') AS days,
            COALESCE(array_agg(DISTINCT e.refund_at) FILTER (WHERE e.kind = 1), '{}') AS refunds
        FROM bouncer_revenue_ltv_entries(p_rows, p_signs) e
        WHERE e.n > 0 AND NOT EXISTS (SELECT 1 FROM unnest(v_envs, v_ids) w (env, id)
            WHERE w.env = e.environment AND w.id = e.original_transaction_id)
        GROUP BY 1, 2, 3) a
    WHERE lp.project_id = p_project_id AND lp.environment = a.environment
      AND lp.original_transaction_id = a.original_transaction_id AND lp.currency = a.currency
      AND NOT (a.days <@ lp.days AND a.refunds <@ lp.refunds);
    IF v_ids IS NOT NULL THEN
        PERFORM bouncer_revenue_ltv_resync(p_project_id, v_envs, v_ids, p_rows, p_signs);
    END IF;
END;
$$;
