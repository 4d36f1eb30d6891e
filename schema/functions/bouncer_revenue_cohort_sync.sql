-- Brings subscription_retention's row of one purchase (revenue_cohorts, schema/0085) up to date after its
-- revenue_transactions rows changed from p_from on and bouncer_revenue_values_sync wrote its spans: the first paid
-- period (read again only when the change reaches it) and the months after it that paid service overlaps (from the
-- spans, when the change falls within the first 13 months; a renewal after those writes nothing). Only a changed
-- row is written; a purchase without a paid period has none. Called by bouncer_revenue_values_sync; never in the
-- receipt's transaction.
-- Planned once per session under bouncer_derive_changes' force_generic_plan: each statement reads by the purchase's own
-- keys only (no condition a plan could turn into a range of the project's rows).
CREATE OR REPLACE FUNCTION bouncer_revenue_cohort_sync(p_project_id uuid, p_environment text, p_original_id text,
    p_from timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_row revenue_cohorts;
    v_first timestamptz;
    v_months int;
BEGIN
    SELECT c.* INTO v_row FROM revenue_cohorts c WHERE c.project_id = p_project_id AND c.environment = p_environment
      AND c.original_transaction_id = p_original_id;
    IF v_row.first_at < p_from THEN
        v_first := v_row.first_at;
        IF p_from >= ((v_first AT TIME ZONE 'UTC') + interval '13 months') AT TIME ZONE 'UTC' THEN
            RETURN;
        END IF;
    ELSE
        SELECT v.purchase_date INTO v_first FROM revenue_transactions v
        WHERE v.project_id = p_project_id AND v.original_transaction_id = p_original_id
          AND v.environment = p_environment AND v.type = 'Auto-Renewable Subscription' AND NOT v.trial
          AND v.price_milli > 0 AND v.expires_date IS NOT NULL
        ORDER BY v.original_transaction_id, v.purchase_date, v.transaction_id LIMIT 1;
        IF v_first IS NULL THEN
            DELETE FROM revenue_cohorts c WHERE c.project_id = p_project_id AND c.environment = p_environment
              AND c.original_transaction_id = p_original_id;
            RETURN;
        END IF;
    END IF;
    -- (The purchase's spans by their key alone: a condition on starts_at would let a plan range over the project's.)
    WITH s AS MATERIALIZED (SELECT s.starts_at, s.ends_at FROM revenue_values s
            WHERE s.project_id = p_project_id AND s.environment = p_environment
              AND s.original_transaction_id = p_original_id)
    SELECT COALESCE(bit_or(1 << g.k), 0) INTO v_months
    FROM s CROSS JOIN LATERAL generate_series(0, 12) g (k)
    WHERE s.starts_at < ((v_first AT TIME ZONE 'UTC') + make_interval(months => g.k + 1)) AT TIME ZONE 'UTC'
      AND s.ends_at > ((v_first AT TIME ZONE 'UTC') + make_interval(months => g.k)) AT TIME ZONE 'UTC';
    IF v_row.first_at IS NULL THEN
        INSERT INTO revenue_cohorts (project_id, environment, original_transaction_id, first_at, months)
        VALUES (p_project_id, p_environment, p_original_id, v_first, v_months);
    ELSIF (v_row.first_at, v_row.months) IS DISTINCT FROM (v_first, v_months) THEN
        UPDATE revenue_cohorts c SET first_at = v_first, months = v_months
        WHERE c.project_id = p_project_id AND c.environment = p_environment
          AND c.original_transaction_id = p_original_id;
    END IF;
END;
$$;
