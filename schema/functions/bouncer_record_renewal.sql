-- Records signed renewal info (from a notification) under the purchase's row lock, and appends the change to the
-- log. Returns 'applied' or 'unchanged' with the purchase as now stored, or 'pending' (purchase NULL) when no
-- transaction of the purchase is known yet: the fact then waits in pending_renewals (newest signature wins) for
-- bouncer_record_transaction, which adopts it when it creates the purchase. The hand-over advisory lock, taken only
-- when the purchase is missing, makes that race-free: either this call sees the new purchase row, or the creator
-- sees the pending fact.
--
-- The only live author of this write rule; its executable specification is PurchaseState.applying(_: RenewalFacts)
-- in Tests/Specification, and StorageTests.RuleTableTests / WriteRulesOracleTests run both on the same facts.
CREATE OR REPLACE FUNCTION bouncer_record_renewal(
    p_project_id uuid, p_original_transaction_id text, p_product_id text, p_auto_renew_product_id text,
    p_auto_renew_status int, p_expiration_intent int, p_grace_period_expires_date timestamptz,
    p_is_in_billing_retry boolean, p_price_increase_status int, p_offer_type int, p_offer_identifier text,
    p_renewal_date timestamptz, p_environment text, p_signed_date timestamptz, p_payload jsonb,
    p_eligible_win_back_offer_ids text[], p_now timestamptz)
RETURNS TABLE (outcome text, purchase purchases)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_purchase purchases;
    v_old purchases;
BEGIN
    SELECT * INTO v_purchase FROM purchases p
    WHERE p.project_id = p_project_id AND p.environment = p_environment
      AND p.original_transaction_id = p_original_transaction_id
    FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM pg_advisory_xact_lock(16978,
            hashtext(p_project_id::text || '/' || p_environment || '/' || p_original_transaction_id));
        -- A new statement: it sees whatever the purchase's creator committed before we got the lock.
        SELECT * INTO v_purchase FROM purchases p
        WHERE p.project_id = p_project_id AND p.environment = p_environment
          AND p.original_transaction_id = p_original_transaction_id
        FOR UPDATE;
        IF NOT FOUND THEN
            INSERT INTO pending_renewals AS r (project_id, original_transaction_id, product_id, auto_renew_product_id,
                auto_renew_status, expiration_intent, grace_period_expires_date, is_in_billing_retry,
                price_increase_status, offer_type, offer_identifier, renewal_date, environment, signed_date, payload,
                received_at, eligible_win_back_offer_ids)
            VALUES (p_project_id, p_original_transaction_id, p_product_id, p_auto_renew_product_id,
                p_auto_renew_status, p_expiration_intent, p_grace_period_expires_date, p_is_in_billing_retry,
                p_price_increase_status, p_offer_type, p_offer_identifier, p_renewal_date, p_environment,
                p_signed_date, p_payload, p_now, p_eligible_win_back_offer_ids)
            ON CONFLICT (project_id, environment, original_transaction_id) DO UPDATE SET
                product_id = EXCLUDED.product_id, auto_renew_product_id = EXCLUDED.auto_renew_product_id,
                auto_renew_status = EXCLUDED.auto_renew_status, expiration_intent = EXCLUDED.expiration_intent,
                grace_period_expires_date = EXCLUDED.grace_period_expires_date,
                is_in_billing_retry = EXCLUDED.is_in_billing_retry,
                price_increase_status = EXCLUDED.price_increase_status, offer_type = EXCLUDED.offer_type,
                offer_identifier = EXCLUDED.offer_identifier, renewal_date = EXCLUDED.renewal_date,
                signed_date = EXCLUDED.signed_date, payload = EXCLUDED.payload,
                received_at = EXCLUDED.received_at, eligible_win_back_offer_ids = EXCLUDED.eligible_win_back_offer_ids
            WHERE r.signed_date < EXCLUDED.signed_date;
            outcome := 'pending';
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;

    -- Newer renewal info wins (PurchaseState.applying(RenewalFacts)).
    IF v_purchase.renewal_signed_date IS NOT NULL AND p_signed_date <= v_purchase.renewal_signed_date THEN
        outcome := 'unchanged';
        purchase := v_purchase;
        RETURN NEXT;
        RETURN;
    END IF;
    v_old := v_purchase;
    UPDATE purchases p SET auto_renew_status = p_auto_renew_status, auto_renew_product_id = p_auto_renew_product_id,
        expiration_intent = p_expiration_intent, grace_period_expires_date = p_grace_period_expires_date,
        is_in_billing_retry = p_is_in_billing_retry, price_increase_status = p_price_increase_status,
        offer_type = p_offer_type, offer_identifier = p_offer_identifier, renewal_signed_date = p_signed_date,
        renewal_payload = p_payload, renewal_product_id = p_product_id, renewal_date = p_renewal_date,
        renewal_environment = p_environment, eligible_win_back_offer_ids = p_eligible_win_back_offer_ids,
        updated_at = p_now
    WHERE p.project_id = p_project_id AND p.environment = p_environment
      AND p.original_transaction_id = p_original_transaction_id
    RETURNING * INTO v_purchase;
    PERFORM bouncer_append_change(p_project_id, p_environment, p_original_transaction_id, v_old, v_purchase,
        NULL, NULL, NULL, NULL, NULL);  -- log
    outcome := 'applied';
    purchase := v_purchase;
    RETURN NEXT;
END;
$$;
