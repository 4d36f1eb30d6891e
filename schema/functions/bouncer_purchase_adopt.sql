-- A purchase just created adopts the renewal info that arrived before it (p_pending, the pending_renewals row its
-- creator deleted under the hand-over lock: bouncer_record_transaction, bouncer_record_transactions). A new
-- purchase has no renewal info, so the pending one is always newer. Returns the purchase as now stored.
CREATE OR REPLACE FUNCTION bouncer_purchase_adopt(p_pending pending_renewals, p_now timestamptz) RETURNS purchases
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_purchase purchases;
BEGIN
    UPDATE purchases p SET auto_renew_status = p_pending.auto_renew_status,
        auto_renew_product_id = p_pending.auto_renew_product_id, expiration_intent = p_pending.expiration_intent,
        grace_period_expires_date = p_pending.grace_period_expires_date,
        is_in_billing_retry = p_pending.is_in_billing_retry, price_increase_status = p_pending.price_increase_status,
        offer_type = p_pending.offer_type, offer_identifier = p_pending.offer_identifier,
        renewal_signed_date = p_pending.signed_date, renewal_payload = p_pending.payload,
        renewal_product_id = p_pending.product_id, renewal_date = p_pending.renewal_date,
        renewal_environment = p_pending.environment,
        eligible_win_back_offer_ids = p_pending.eligible_win_back_offer_ids, updated_at = p_now
    WHERE p.project_id = p_pending.project_id AND p.environment = p_pending.environment
      AND p.original_transaction_id = p_pending.original_transaction_id
    RETURNING p.* INTO v_purchase;
    RETURN v_purchase;
END;
$$;
