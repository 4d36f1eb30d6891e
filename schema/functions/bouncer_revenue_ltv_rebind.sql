-- realized_ltv's roll-ups (schema/0086) after bindings moved: p_changes, a JSON array of {"environment",
-- "original_transaction_id"} (the deriver's batch rows with `bound` or `revoked`, a transfer or an app account token's
-- change among them, and 0086's backfill rows `ltv`; the erasure of a user's bindings): each purchase whose customer
-- is no longer the one its rows name, or that has amounts and no rows yet (0086's backfill), synced whole with its
-- customers before and after (bouncer_revenue_ltv_resync). Called by bouncer_derive_changes after the batch's revenue
-- roll-up; never in the receipt's transaction. A purchase without amounts, or whose customer did not change, costs a
-- probe or two and writes nothing (a batch of bindings to purchases without a price reads one index page each).
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_rebind(p_project_id uuid, p_changes jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_envs text[];
    v_ids text[];
    v_was text[];
BEGIN
    IF p_changes IS NULL THEN
        RETURN;
    END IF;
    -- Each purchase's customer as its rows name it; without rows, whether it has amounts (then it is synced).
    SELECT array_agg(e.environment), array_agg(e.original_transaction_id), array_agg(e.was)
    INTO v_envs, v_ids, v_was
    FROM (SELECT k.environment, k.original_transaction_id, lp.customer AS was
        FROM (SELECT DISTINCT e.environment, e.original_transaction_id
            FROM jsonb_to_recordset(p_changes) e (environment text, original_transaction_id text)
            WHERE e.original_transaction_id IS NOT NULL) k
        LEFT JOIN LATERAL (SELECT lp.customer FROM revenue_ltv_purchases lp WHERE lp.project_id = p_project_id
            AND lp.environment = k.environment AND lp.original_transaction_id = k.original_transaction_id
            LIMIT 1) lp ON true
        WHERE lp.customer IS NOT NULL OR EXISTS (SELECT 1 FROM revenue_transactions v
            WHERE v.project_id = p_project_id AND v.original_transaction_id = k.original_transaction_id
              AND v.environment = k.environment AND v.price_milli > 0)) e;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;
    -- Those whose customer is another now (a statement of its own: on Citus a function reading a tenant table inside
    -- a statement routed to the tenant's worker would be a nested distributed query).
    SELECT array_agg(k.env), array_agg(k.id) INTO v_envs, v_ids
    FROM unnest(v_envs, v_ids, v_was) k (env, id, was)
    WHERE k.was IS DISTINCT FROM bouncer_revenue_ltv_customer(p_project_id, k.env, k.id);
    IF v_ids IS NOT NULL THEN
        PERFORM bouncer_revenue_ltv_resync(p_project_id, v_envs, v_ids, '{}', '{}');
    END IF;
END;
$$;
