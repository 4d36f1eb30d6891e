-- realized_ltv's roll-ups (schema/0086) after bindings moved: p_changes, a JSON array of {"environment",
-- "original_transaction_id"} (the deriver's batch rows with `bound` or `revoked`, a transfer or an app account token's
-- change among them, and 0086's backfill rows `ltv`; the erasure of a user's bindings): each purchase with rows, or
-- with amounts and no rows yet (0086's backfill), whose customer is no longer the one its rows name, synced whole with
-- its customers before and after (bouncer_revenue_ltv_resync, which reads the customer). Called by
-- bouncer_derive_changes before the batch's revenue roll-up, which syncs the batch's new purchases itself (no rows and
-- no amounts yet here: skipped); never in the receipt's transaction. A purchase without amounts costs two probes and
-- writes nothing (a batch of bindings to purchases without a price reads an index page or two each); one whose
-- customer did not change, three.
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_rebind(p_project_id uuid, p_changes jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_envs text[];
    v_ids text[];
BEGIN
    IF p_changes IS NULL THEN
        RETURN;
    END IF;
    SELECT array_agg(k.environment), array_agg(k.original_transaction_id) INTO v_envs, v_ids
    FROM (SELECT DISTINCT e.environment, e.original_transaction_id
        FROM jsonb_to_recordset(p_changes) e (environment text, original_transaction_id text)
        WHERE e.original_transaction_id IS NOT NULL) k
    WHERE EXISTS (SELECT 1 FROM revenue_ltv_purchases lp WHERE lp.project_id = p_project_id
            AND lp.environment = k.environment AND lp.original_transaction_id = k.original_transaction_id)
        OR EXISTS (SELECT 1 FROM revenue_transactions v
            WHERE v.project_id = p_project_id AND v.original_transaction_id = k.original_transaction_id
              AND v.environment = k.environment AND v.price_milli > 0);
    IF v_ids IS NOT NULL THEN
        PERFORM bouncer_revenue_ltv_resync(p_project_id, v_envs, v_ids, '{}', '{}', true);
    END IF;
END;
$$;
