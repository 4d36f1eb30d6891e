-- Moves revenue_value_days (schema/0085) by a batch's span moves (p_moves: the rows returned by
-- bouncer_revenue_values_sync for each purchase of the batch, n the change of each day's count): summed per day row,
-- so a day row is written once a batch instead of once a purchase (every new purchase of a day and price moved the same
-- two rows), a net zero writes nothing, and a day back to zero is removed. Called by bouncer_revenue_roll_up once per
-- batch; never in the receipt's transaction.
CREATE OR REPLACE FUNCTION bouncer_revenue_value_days_move(p_project_id uuid, p_moves revenue_value_days[])
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_zero revenue_value_days[];
BEGIN
    IF COALESCE(cardinality(p_moves), 0) = 0 THEN
        RETURN;
    END IF;
    WITH d AS (SELECT m.environment, m.day, m.currency, m.monthly_milli, sum(m.n) AS n FROM unnest(p_moves) m
            GROUP BY 1, 2, 3, 4 HAVING sum(m.n) <> 0),
        up AS (INSERT INTO revenue_value_days AS vd (project_id, environment, day, currency, monthly_milli, n)
            SELECT p_project_id, d.environment, d.day, d.currency, d.monthly_milli, d.n FROM d
            ON CONFLICT (project_id, day, environment, currency, monthly_milli) DO UPDATE SET n = vd.n + EXCLUDED.n
            RETURNING vd.environment, vd.day, vd.currency, vd.monthly_milli, vd.n)
    SELECT array_agg(ROW(p_project_id, up.environment, up.day, up.currency, up.monthly_milli, 0)::revenue_value_days)
    INTO v_zero FROM up WHERE up.n = 0;
    IF v_zero IS NOT NULL THEN
        DELETE FROM revenue_value_days vd USING unnest(v_zero) z
        WHERE vd.project_id = p_project_id AND vd.day = z.day AND vd.environment = z.environment
          AND vd.currency = z.currency AND vd.monthly_milli = z.monthly_milli AND vd.n = 0;
    END IF;
END;
$$;
