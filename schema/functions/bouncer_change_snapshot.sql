-- What a purchase's webhook events compare and show, and its status needs (the columns of
-- webhook_purchase_states, minus the key): the purchase's facts, and the revocation type of its latest transaction
-- when revoked (a refund or a revocation: entitlement.revoked's reason).
--
-- PL/pgSQL, not SQL: its sub-select keeps an SQL function from being inlined, and a non-inlined SQL function called
-- from a PL/pgSQL statement is parsed, analyzed and planned again at every execution of that statement (the function
-- cache lives in the statement's executor state). Every log append calls it once or twice: that re-planning was
-- 15 % of PostgreSQL's CPU per receipt (perf, issue 22). PL/pgSQL compiles once per session and caches the plan.
CREATE OR REPLACE FUNCTION bouncer_change_snapshot(p purchases) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_revocation_type text;
BEGIN
    IF p.revocation_date IS NOT NULL THEN
        SELECT t.revocation_type INTO v_revocation_type FROM transactions t
        WHERE t.project_id = p.project_id AND t.environment = p.environment
          AND t.transaction_id = p.latest_transaction_id;
    END IF;
    RETURN jsonb_build_object('latest_transaction_id', p.latest_transaction_id, 'product_id', p.product_id,
        'type', p.type, 'purchase_date', p.purchase_date, 'expires_date', p.expires_date,
        'revocation_date', p.revocation_date, 'revocation_reason', p.revocation_reason,
        'revocation_type', v_revocation_type,
        'grace_period_expires_date', p.grace_period_expires_date, 'is_in_billing_retry', p.is_in_billing_retry,
        'auto_renew_status', p.auto_renew_status, 'auto_renew_product_id', p.auto_renew_product_id,
        'eligible_win_back_offer_ids', p.eligible_win_back_offer_ids);
END;
$$;
