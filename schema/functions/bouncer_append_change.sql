-- Appends one log row to purchase_changes (its data keys: see 0025_purchase_changes.sql, and tx: 0035_overview_days.sql)
-- unless the call changed nothing a derived effect reads.
CREATE OR REPLACE FUNCTION bouncer_append_change(p_project_id uuid, p_environment text, p_original_transaction_id text,
    p_old purchases, p_new purchases, p_holders text[], p_refund jsonb, p_revoked text[], p_moved_to text,
    p_bound text, p_tx jsonb DEFAULT NULL) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_changed boolean := p_old.original_transaction_id IS NOT NULL AND bouncer_purchase_changed(p_old, p_new);
BEGIN
    IF NOT v_changed AND p_refund IS NULL AND p_bound IS NULL AND COALESCE(cardinality(p_revoked), 0) = 0
       AND p_tx IS NULL THEN
        RETURN;
    END IF;
    IF p_holders IS NULL AND (v_changed OR p_refund IS NOT NULL) THEN
        p_holders := bouncer_purchase_holders(p_project_id, p_environment, p_original_transaction_id);
    END IF;
    INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
    VALUES (p_project_id, p_environment, p_original_transaction_id, jsonb_strip_nulls(jsonb_build_object(
        'old', CASE WHEN v_changed THEN bouncer_change_snapshot(p_old) END,
        'new', CASE WHEN v_changed OR p_bound IS NOT NULL THEN bouncer_change_snapshot(p_new) END,
        'holders', CASE WHEN cardinality(p_holders) > 0 THEN to_jsonb(p_holders) END,
        'refund', p_refund,
        'revoked', CASE WHEN cardinality(p_revoked) > 0 THEN to_jsonb(p_revoked) END,
        'moved_to', p_moved_to, 'bound', p_bound, 'tx', p_tx)), now());
END;
$$;
