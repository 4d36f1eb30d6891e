-- What a purchase's webhook events compare and show, and its status needs (the columns of
-- webhook_purchase_states, minus the key), as the log keeps it (purchase_changes.purchase_before / purchase_after,
-- schema/0097): the purchase's facts, and the revocation type of its latest transaction when revoked (a refund or a
-- revocation: entitlement.revoked's reason; bouncer_latest_revocation_type).
--
-- SQL, and inlined where it is called with a column or a variable (no sub-select: a non-inlined SQL function called
-- from a PL/pgSQL statement is parsed, analyzed and planned again at every execution of that statement). A value of
-- its own type, not jsonb: the receipt's transaction builds it at every renewal (issue 22; building two jsonb
-- objects was ~50-80 us of a renewal's ~375 us of PostgreSQL CPU). Called only with a purchase (never NULL).
CREATE OR REPLACE FUNCTION bouncer_change_snapshot(p purchases) RETURNS bouncer_purchase_snapshot
LANGUAGE sql STABLE AS $$
    SELECT ROW(p.latest_transaction_id, p.product_id, p.type, p.purchase_date, p.expires_date, p.revocation_date,
        p.revocation_reason,
        CASE WHEN p.revocation_date IS NOT NULL
            THEN bouncer_latest_revocation_type(p.project_id, p.environment, p.latest_transaction_id) END,
        p.grace_period_expires_date, p.is_in_billing_retry, p.auto_renew_status, p.auto_renew_product_id,
        p.eligible_win_back_offer_ids)::bouncer_purchase_snapshot
$$;
