-- Whether b differs from a in a column a webhook transition event compares (the columns 0012's purchase trigger
-- reacted to), or in what the events show that only renewal info changes (the win-back offers: the deriver's copy
-- must follow them, though no event announces the change itself).
CREATE OR REPLACE FUNCTION bouncer_purchase_changed(a purchases, b purchases) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT a.latest_transaction_id IS DISTINCT FROM b.latest_transaction_id
        OR a.expires_date IS DISTINCT FROM b.expires_date
        OR a.revocation_date IS DISTINCT FROM b.revocation_date
        OR a.product_id IS DISTINCT FROM b.product_id
        OR a.grace_period_expires_date IS DISTINCT FROM b.grace_period_expires_date
        OR a.is_in_billing_retry IS DISTINCT FROM b.is_in_billing_retry
        OR a.auto_renew_status IS DISTINCT FROM b.auto_renew_status
        OR a.eligible_win_back_offer_ids IS DISTINCT FROM b.eligible_win_back_offer_ids
$$;
