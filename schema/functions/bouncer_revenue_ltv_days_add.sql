-- Adds p_rows' counts (n: a signed difference) to revenue_ltv_days (schema/0086), summed per row first so each row is
-- written once; a net change of zero writes nothing, a count back to zero removes its row. Rows without a cohort
-- (a purchase that had none: its amounts cancel) are left out.
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_days_add(p_project_id uuid, p_rows revenue_ltv_days[]) RETURNS void
-- No planner settings of its own (as bouncer_revenue_value_days_move): rows back to zero are few, each removed by a
-- probe of the key.
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_zero revenue_ltv_days[];
BEGIN
    WITH d AS (SELECT r.environment, r.cohort_day, r.day, r.currency, r.kind, r.price_milli, r.tier,
                r.refund_milli_percent, r.refund_at, sum(r.n) AS n
            FROM unnest(p_rows) r WHERE r.cohort_day IS NOT NULL
            GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9 HAVING sum(r.n) <> 0),
        up AS (INSERT INTO revenue_ltv_days AS x (project_id, environment, cohort_day, day, currency, kind, price_milli,
                tier, refund_milli_percent, refund_at, n)
            SELECT p_project_id, d.environment, d.cohort_day, d.day, d.currency, d.kind, d.price_milli, d.tier,
                d.refund_milli_percent, d.refund_at, d.n FROM d
            ON CONFLICT (project_id, cohort_day, environment, day, currency, kind, price_milli, tier,
                refund_milli_percent, refund_at) DO UPDATE SET n = x.n + EXCLUDED.n
            RETURNING x.environment, x.cohort_day, x.day, x.currency, x.kind, x.price_milli, x.tier,
                x.refund_milli_percent, x.refund_at, x.n)
    SELECT array_agg(ROW(p_project_id, up.environment, up.cohort_day, up.day, up.currency, up.kind, up.price_milli,
            up.tier, up.refund_milli_percent, up.refund_at, 0)::revenue_ltv_days)
    INTO v_zero FROM up WHERE up.n = 0;
    IF v_zero IS NOT NULL THEN
        DELETE FROM revenue_ltv_days x USING unnest(v_zero) z
        WHERE x.project_id = p_project_id AND x.cohort_day = z.cohort_day AND x.environment = z.environment
          AND x.day = z.day AND x.currency = z.currency AND x.kind = z.kind AND x.price_milli = z.price_milli
          AND x.tier = z.tier AND x.refund_milli_percent = z.refund_milli_percent AND x.refund_at = z.refund_at
          AND x.n = 0;
    END IF;
END;
$$;
