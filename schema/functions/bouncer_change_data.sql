-- One log row's data (purchase_changes.data; its keys: 0025_purchase_changes.sql, and tx: 0035_overview_days.sql), or
-- NULL when the call changed nothing a derived effect reads. p_changed: the purchase existed and changed
-- (bouncer_purchase_changed). The one author of the row for bouncer_append_change (a call) and
-- bouncer_record_transactions (a batch).
CREATE OR REPLACE FUNCTION bouncer_change_data(p_changed boolean, p_old purchases, p_new purchases,
    p_holders text[], p_refund jsonb, p_revoked text[], p_moved_to text, p_bound text, p_tx jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p_changed OR p_refund IS NOT NULL OR p_bound IS NOT NULL OR cardinality(p_revoked) > 0
            OR p_tx IS NOT NULL
        THEN jsonb_strip_nulls(jsonb_build_object(
            'old', CASE WHEN p_changed THEN bouncer_change_snapshot(p_old) END,
            'new', CASE WHEN p_changed OR p_bound IS NOT NULL THEN bouncer_change_snapshot(p_new) END,
            'holders', CASE WHEN cardinality(p_holders) > 0 THEN to_jsonb(p_holders) END,
            'refund', p_refund,
            'revoked', CASE WHEN cardinality(p_revoked) > 0 THEN to_jsonb(p_revoked) END,
            'moved_to', p_moved_to, 'bound', p_bound, 'tx', p_tx)) END
$$;
