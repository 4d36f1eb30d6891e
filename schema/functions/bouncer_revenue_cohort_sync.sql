-- Brings subscription_retention's rows (revenue_cohorts, schema/0085) of a batch's purchases up to date (purchase i:
-- p_envs[i], p_ids[i], each once) after their revenue_transactions rows changed from p_froms[i] on and
-- bouncer_revenue_values_sync wrote their spans: each one's first paid period (read again only when the change reaches
-- it) and the months after it that paid service overlaps (from the spans, when the change falls within the first 13
-- months; a renewal after those writes nothing). Only a changed row is written; a purchase without a paid period has
-- none. Called by bouncer_revenue_roll_up once per batch (it was one call per purchase: `wp4`); never in the
-- receipt's transaction.
-- Each purchase's rows are read by its own keys (lateral probes, OFFSET 0: never flattened into a join that a generic
-- plan could turn into a range of the project's rows).
CREATE OR REPLACE FUNCTION bouncer_revenue_cohort_sync(p_project_id uuid, p_envs text[], p_ids text[],
    p_froms timestamptz[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    WITH k AS MATERIALIZED (
        SELECT k.env, k.oid, k.d0, c.first_at AS had_first, c.months AS had_months
        FROM unnest(p_envs, p_ids, p_froms) AS k (env, oid, d0)
        LEFT JOIN LATERAL (SELECT c.first_at, c.months FROM revenue_cohorts c
            WHERE c.project_id = p_project_id AND c.environment = k.env AND c.original_transaction_id = k.oid
            OFFSET 0) c ON true
    ), f AS MATERIALIZED (
        -- The first paid period: kept when it began before the change (nothing to do from 13 months after it on).
        SELECT k.*, CASE WHEN k.had_first < k.d0 THEN k.had_first ELSE (
                SELECT v.purchase_date FROM revenue_transactions v
                WHERE v.project_id = p_project_id AND v.original_transaction_id = k.oid
                  AND v.environment = k.env AND v.type = 'Auto-Renewable Subscription' AND NOT v.trial
                  AND v.price_milli > 0 AND v.expires_date IS NOT NULL
                ORDER BY v.original_transaction_id, v.purchase_date, v.transaction_id LIMIT 1) END AS first
        FROM k
        WHERE k.had_first IS NULL OR NOT (k.had_first < k.d0
            AND k.d0 >= ((k.had_first AT TIME ZONE 'UTC') + interval '13 months') AT TIME ZONE 'UTC')
    ), m AS (
        -- (The purchase's spans by their key alone: a condition on starts_at would let a plan range over the
        -- project's.)
        SELECT f.*, b.months FROM f CROSS JOIN LATERAL (
            SELECT COALESCE(bit_or(1 << g.k), 0) AS months
            FROM (SELECT s.starts_at, s.ends_at FROM revenue_values s
                  WHERE s.project_id = p_project_id AND s.environment = f.env
                    AND s.original_transaction_id = f.oid OFFSET 0) s
            CROSS JOIN LATERAL generate_series(0, 12) g (k)
            WHERE s.starts_at < ((f.first AT TIME ZONE 'UTC') + make_interval(months => g.k + 1)) AT TIME ZONE 'UTC'
              AND s.ends_at > ((f.first AT TIME ZONE 'UTC') + make_interval(months => g.k)) AT TIME ZONE 'UTC') b
        WHERE f.first IS NOT NULL
    ), gone AS (
        DELETE FROM revenue_cohorts c USING f
        WHERE f.first IS NULL AND f.had_first IS NOT NULL AND c.project_id = p_project_id
          AND c.environment = f.env AND c.original_transaction_id = f.oid
    )
    INSERT INTO revenue_cohorts AS c (project_id, environment, original_transaction_id, first_at, months)
    SELECT p_project_id, m.env, m.oid, m.first, m.months FROM m
    WHERE (m.had_first, m.had_months) IS DISTINCT FROM (m.first, m.months)
    ON CONFLICT (project_id, environment, original_transaction_id) DO UPDATE SET first_at = EXCLUDED.first_at,
        months = EXCLUDED.months;
END;
$$;
