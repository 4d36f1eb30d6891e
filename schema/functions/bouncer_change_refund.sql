-- The log's refund fact for a stored transaction t (purchase_changes' data.refund, 0025): its revocation when that
-- is a refund (bouncer_revocation_kind: not a Family Sharing revoke), else NULL. The caller says whether the refund
-- is new (the transaction was inserted, or had no revocation before the call).
CREATE OR REPLACE FUNCTION bouncer_change_refund(t transactions) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN t.revocation_date IS NOT NULL
            AND bouncer_revocation_kind(t.revocation_reason, t.revocation_type) = 'refunded'
        THEN jsonb_build_object('transaction_id', t.transaction_id, 'product_id', t.product_id,
            'revocation_date', t.revocation_date, 'revocation_reason', t.revocation_reason,
            'revocation_type', t.revocation_type, 'revocation_percentage', t.revocation_percentage) END
$$;
