-- The log row a record call appends (purchase_changes' data, purchase_before and purchase_after; data's keys:
-- 0025_purchase_changes.sql, tx: 0035_overview_days.sql; the snapshots: 0097), or no row when the call changed
-- nothing a derived effect reads. p_changed: the purchase existed and changed (bouncer_purchase_changed). The one
-- author of the row for bouncer_append_change (a call) and bouncer_record_new_transactions (a batch).
--
-- A set of at most one row, so that it is inlined where it is called (FROM ... LATERAL): each column computed once,
-- and "no row" is the WHERE, not a test of a computed column.
CREATE OR REPLACE FUNCTION bouncer_change_data(p_changed boolean, p_old purchases, p_new purchases,
    p_holders text[], p_refund jsonb, p_revoked text[], p_moved_to text, p_bound text, p_tx jsonb)
RETURNS TABLE (data jsonb, purchase_before bouncer_purchase_snapshot, purchase_after bouncer_purchase_snapshot)
LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
            'holders', CASE WHEN cardinality(p_holders) > 0 THEN to_jsonb(p_holders) END,
            'refund', p_refund,
            'revoked', CASE WHEN cardinality(p_revoked) > 0 THEN to_jsonb(p_revoked) END,
            'moved_to', p_moved_to, 'bound', p_bound, 'tx', p_tx)),
        CASE WHEN p_changed THEN bouncer_change_snapshot(p_old) END,
        CASE WHEN p_changed OR p_bound IS NOT NULL THEN bouncer_change_snapshot(p_new) END
    WHERE p_changed OR p_refund IS NOT NULL OR p_bound IS NOT NULL OR cardinality(p_revoked) > 0 OR p_tx IS NOT NULL
$$;
