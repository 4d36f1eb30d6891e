-- Moves revenue_movement_days (schema/0087) by a batch's moves (p_moves: the rows bouncer_revenue_values_sync returned
-- for each purchase of the batch, from bouncer_revenue_movement_moves; n the change of each row's count): summed per
-- row, so a row is written once a batch instead of once a purchase (the batch's new purchases of a day and price move
-- the same rows), a net zero writes nothing, and a row back to zero is removed. Called by bouncer_revenue_roll_up once
-- per batch (as bouncer_revenue_value_days_move); never in the receipt's transaction.
CREATE OR REPLACE FUNCTION bouncer_revenue_movement_days_move(p_project_id uuid, p_moves revenue_movement_days[])
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_zero revenue_movement_days[];
BEGIN
    IF COALESCE(cardinality(p_moves), 0) = 0 THEN
        RETURN;
    END IF;
    WITH d AS (SELECT m.environment, m.day, m.currency, m.kind, m.amount_milli, sum(m.n) AS n FROM unnest(p_moves) m
            GROUP BY 1, 2, 3, 4, 5 HAVING sum(m.n) <> 0),
        up AS (INSERT INTO revenue_movement_days AS x (project_id, environment, day, currency, kind, amount_milli, n)
            SELECT p_project_id, d.environment, d.day, d.currency, d.kind, d.amount_milli, d.n FROM d
            ON CONFLICT (project_id, day, environment, currency, kind, amount_milli) DO UPDATE SET n = x.n + EXCLUDED.n
            RETURNING x.environment, x.day, x.currency, x.kind, x.amount_milli, x.n)
    SELECT array_agg(ROW(p_project_id, up.environment, up.day, up.currency, up.kind, up.amount_milli,
            0)::revenue_movement_days)
    INTO v_zero FROM up WHERE up.n = 0;
    IF v_zero IS NOT NULL THEN
        DELETE FROM revenue_movement_days x USING unnest(v_zero) z
        WHERE x.project_id = p_project_id AND x.day = z.day AND x.environment = z.environment
          AND x.currency = z.currency AND x.kind = z.kind AND x.amount_milli = z.amount_milli AND x.n = 0;
    END IF;
END;
$$;
