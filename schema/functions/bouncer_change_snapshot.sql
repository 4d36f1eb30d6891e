-- What a purchase's webhook events compare and show, and its status needs (the columns of
-- webhook_purchase_states, minus the key): the purchase's facts, and the revocation type of its latest transaction
-- when revoked (a refund or a revocation: entitlement.revoked's reason).
CREATE OR REPLACE FUNCTION bouncer_change_snapshot(p purchases) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('latest_transaction_id', p.latest_transaction_id, 'product_id', p.product_id,
        'type', p.type, 'purchase_date', p.purchase_date, 'expires_date', p.expires_date,
        'revocation_date', p.revocation_date, 'revocation_reason', p.revocation_reason,
        'revocation_type', CASE WHEN p.revocation_date IS NOT NULL THEN (SELECT t.revocation_type FROM transactions t
            WHERE t.project_id = p.project_id AND t.environment = p.environment
              AND t.transaction_id = p.latest_transaction_id) END,
        'grace_period_expires_date', p.grace_period_expires_date, 'is_in_billing_retry', p.is_in_billing_retry,
        'auto_renew_status', p.auto_renew_status, 'auto_renew_product_id', p.auto_renew_product_id)
$$;
