-- realized_ltv's roll-ups (schema/0086) after bindings moved: p_changes, a JSON array of {"environment",
-- "original_transaction_id"} (the deriver's batch rows with `bound` or `revoked`, a transfer or an app account token's
-- change among them, and 0086's backfill rows `ltv`; the erasure of a user's bindings): each purchase synced whole
-- with its customers before and after (bouncer_revenue_ltv_resync). Called by bouncer_derive_changes after the batch's
-- revenue roll-up; never in the receipt's transaction. A purchase whose customer did not change rewrites nothing.
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_rebind(p_project_id uuid, p_changes jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_envs text[];
    v_ids text[];
BEGIN
    IF p_changes IS NULL THEN
        RETURN;
    END IF;
    SELECT array_agg(e.environment), array_agg(e.original_transaction_id) INTO v_envs, v_ids
    FROM (SELECT DISTINCT e.environment, e.original_transaction_id
        FROM jsonb_to_recordset(p_changes) e (environment text, original_transaction_id text)
        WHERE e.original_transaction_id IS NOT NULL) e;
    IF v_ids IS NOT NULL THEN
        PERFORM bouncer_revenue_ltv_resync(p_project_id, v_envs, v_ids, '{}', '{}');
    END IF;
END;
$$;
