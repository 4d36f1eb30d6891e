-- Appends one log row to purchase_changes (its data: bouncer_change_data) unless the call changed nothing a derived
-- effect reads.
CREATE OR REPLACE FUNCTION bouncer_append_change(p_project_id uuid, p_environment text, p_original_transaction_id text,
    p_old purchases, p_new purchases, p_holders text[], p_refund jsonb, p_revoked text[], p_moved_to text,
    p_bound text, p_tx jsonb DEFAULT NULL) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_changed boolean := p_old.original_transaction_id IS NOT NULL AND bouncer_purchase_changed(p_old, p_new);
    v_data jsonb;
BEGIN
    IF p_holders IS NULL AND (v_changed OR p_refund IS NOT NULL) THEN
        p_holders := bouncer_purchase_holders(p_project_id, p_environment, p_original_transaction_id);
    END IF;
    v_data := bouncer_change_data(v_changed, p_old, p_new, p_holders, p_refund, p_revoked, p_moved_to, p_bound, p_tx);
    IF v_data IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
    VALUES (p_project_id, p_environment, p_original_transaction_id, v_data, now());
END;
$$;
