-- Appends one log row to purchase_changes (bouncer_change_data) unless the call changed nothing a derived effect
-- reads. INSERT ... VALUES: on Citus a router insert (an INSERT ... SELECT from a function is pulled to the
-- coordinator).
CREATE OR REPLACE FUNCTION bouncer_append_change(p_project_id uuid, p_environment text, p_original_transaction_id text,
    p_old purchases, p_new purchases, p_holders text[], p_refund jsonb, p_revoked text[], p_moved_to text,
    p_bound text, p_tx jsonb DEFAULT NULL) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_changed boolean := p_old.original_transaction_id IS NOT NULL AND bouncer_purchase_changed(p_old, p_new);
    v_row record;
BEGIN
    IF p_holders IS NULL AND (v_changed OR p_refund IS NOT NULL) THEN
        p_holders := bouncer_purchase_holders(p_project_id, p_environment, p_original_transaction_id);
    END IF;
    SELECT d.* INTO v_row
    FROM bouncer_change_data(v_changed, p_old, p_new, p_holders, p_refund, p_revoked, p_moved_to, p_bound, p_tx) d;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, purchase_before,
        purchase_after, created_at)
    VALUES (p_project_id, p_environment, p_original_transaction_id, v_row.data, v_row.purchase_before,
        v_row.purchase_after, now());
END;
$$;
