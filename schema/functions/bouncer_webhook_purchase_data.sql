-- The purchase as webhook events show it (auto_renew_enabled is StatusRules' autoRenewEnabled for a purchase that
-- is not revoked; StorageTests.RuleTableTests compares them). For a commitment plan (App Store Server API 1.21), also
-- billing_plan and commitment as GET /v1/subscriptions shows them (Storage's CommitmentRows): read from the latest
-- transaction's stored payload and the purchase's renewal payload, by key, only when p names its project (every
-- caller's row does); absent for ordinary plans, as in the API. eligible_win_back_offer_ids: [] when none is known.
--
-- PL/pgSQL, not SQL: a sub-select keeps an SQL function from being inlined and would be planned again at every call
-- (see bouncer_change_snapshot).
CREATE OR REPLACE FUNCTION bouncer_webhook_purchase_data(p purchases) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_data jsonb;
    v_tx jsonb;
    v_renewal jsonb;
    v_period text;
    v_periods text;
    v_expires text;
    v_renews text;
BEGIN
    v_data := jsonb_build_object(
        'environment', p.environment,
        'original_transaction_id', p.original_transaction_id,
        'transaction_id', p.latest_transaction_id,
        'product_id', p.product_id,
        'expires_at', bouncer_webhook_time(p.expires_date),
        'auto_renew_enabled', CASE WHEN p.type = 'Auto-Renewable Subscription'
            THEN COALESCE(p.auto_renew_status = 1, true) ELSE false END,
        'eligible_win_back_offer_ids', to_jsonb(COALESCE(p.eligible_win_back_offer_ids, '{}')));
    IF p.project_id IS NULL OR p.latest_transaction_id IS NULL THEN
        RETURN v_data;
    END IF;
    -- Called per row by statements Citus may route to the tenant's worker (bouncer_citus_allow_nested).
    PERFORM bouncer_citus_allow_nested();
    SELECT t.payload, u.renewal_payload INTO v_tx, v_renewal
    FROM transactions t
    LEFT JOIN purchases u ON u.project_id = t.project_id AND u.environment = t.environment
                         AND u.original_transaction_id = t.original_transaction_id
    WHERE t.project_id = p.project_id AND t.environment = p.environment AND t.transaction_id = p.latest_transaction_id;
    v_period := v_tx #>> '{commitmentInfo,billingPeriodNumber}';
    v_periods := v_tx #>> '{commitmentInfo,totalBillingPeriods}';
    v_expires := v_tx #>> '{commitmentInfo,commitmentExpiresDate}';
    v_renews := v_renewal #>> '{commitmentInfo,commitmentAutoRenewStatus}';
    IF v_tx ->> 'billingPlanType' IS NULL AND v_period IS NULL AND v_periods IS NULL AND v_expires IS NULL
       AND v_renews IS NULL THEN
        RETURN v_data;
    END IF;
    -- A member that is not a decimal integer (or an instant outside 1970…9999) reads as null, as CommitmentPlan.from.
    RETURN v_data || jsonb_build_object(
        'billing_plan', v_tx ->> 'billingPlanType',
        'commitment', CASE WHEN v_period IS NULL AND v_periods IS NULL AND v_expires IS NULL AND v_renews IS NULL
            THEN NULL ELSE jsonb_build_object(
            'billing_period', CASE WHEN v_period ~ '^[0-9]{1,18}$' THEN v_period::bigint END,
            'total_billing_periods', CASE WHEN v_periods ~ '^[0-9]{1,18}$' THEN v_periods::bigint END,
            'commitment_expires_date', CASE WHEN v_expires ~ '^[0-9]{1,15}$' THEN CASE
                WHEN v_expires::bigint <= 253402300799999
                THEN bouncer_webhook_time(timestamptz 'epoch' + v_expires::bigint * interval '1 millisecond') END END,
            'will_renew', CASE WHEN v_renews ~ '^[0-9]{1,18}$' THEN v_renews::bigint = 1 END) END);
END;
$$;
