-- A webhook created: what the project's users hold now is what was announced (no replay of old grants), and the
-- log rows pending so far, whose changes that state already includes, are consumed. The copy in one statement (one
-- snapshot), then its entitlements; the caller holds the project's deriver lock (16980) and creates the endpoint in
-- the same transaction.
CREATE OR REPLACE FUNCTION bouncer_webhook_seed(p_project_id uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_tx jsonb;
BEGIN
    -- The consumed rows' tx entries still count in the overview (schema/0035), as the deriver's do.
    WITH consumed AS (
        DELETE FROM purchase_changes c WHERE c.project_id = p_project_id
        RETURNING c.environment, c.original_transaction_id, c.data -> 'tx' AS tx
    ), copied AS (
        INSERT INTO webhook_purchase_states
        SELECT st.* FROM subscriptions s
        JOIN purchases p ON p.project_id = s.project_id AND p.environment = s.environment
                        AND p.original_transaction_id = s.original_transaction_id
        CROSS JOIN LATERAL bouncer_webhook_state(p_project_id, s.user_id,
            to_jsonb(bouncer_change_snapshot(ROW(p.*)::purchases)) || jsonb_build_object('environment', p.environment,
                'original_transaction_id', p.original_transaction_id),
            now()) st
        WHERE s.project_id = p_project_id AND s.revoked_at IS NULL
        ON CONFLICT DO NOTHING
    )
    SELECT jsonb_agg(jsonb_build_object('environment', environment,
            'original_transaction_id', original_transaction_id, 'tx', tx)) FILTER (WHERE tx IS NOT NULL)
    INTO v_tx FROM consumed;
    PERFORM bouncer_revenue_roll_up(p_project_id, v_tx);
    PERFORM bouncer_overview_roll_up(p_project_id, v_tx);
    PERFORM bouncer_finish_queue_add(p_project_id, v_tx);
    INSERT INTO webhook_entitlement_states (project_id, user_id, entitlement, environment, original_transaction_id,
        product_id, expires_at)
    SELECT p_project_id, u.user_id, n.* FROM (
        SELECT DISTINCT st.user_id FROM webhook_purchase_states st WHERE st.project_id = p_project_id) u
    CROSS JOIN LATERAL bouncer_webhook_copy_entitlements(p_project_id, u.user_id) n
    ON CONFLICT DO NOTHING;
END;
$$;
