-- Moves revenue_days (schema/0072) by one revenue_transactions row, p_sign = +1 for a row written, −1 for the row it
-- replaced or a row removed: bouncer_revenue_days_move_batch with one row (the roll-up moves a whole batch's rows in
-- one statement there).
CREATE OR REPLACE FUNCTION bouncer_revenue_days_move(r revenue_transactions, p_sign int) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM bouncer_revenue_days_move_batch(r.project_id, ARRAY[r], ARRAY[p_sign]);
END;
$$;
