-- The purchase as webhook events show it (auto_renew_enabled is StatusRules' autoRenewEnabled for a purchase that
-- is not revoked; StorageTests.RuleTableTests compares them). eligible_win_back_offer_ids: [] when none is known.
CREATE OR REPLACE FUNCTION bouncer_webhook_purchase_data(p purchases) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'environment', p.environment,
        'original_transaction_id', p.original_transaction_id,
        'transaction_id', p.latest_transaction_id,
        'product_id', p.product_id,
        'expires_at', bouncer_webhook_time(p.expires_date),
        'auto_renew_enabled', CASE WHEN p.type = 'Auto-Renewable Subscription'
            THEN COALESCE(p.auto_renew_status = 1, true) ELSE false END,
        'eligible_win_back_offer_ids', to_jsonb(COALESCE(p.eligible_win_back_offer_ids, '{}')))
$$;
