-- The money of one transaction as webhook events show it (issue 26, README "Revenue and charts"): price and
-- currency as Apple signed them, proceeds after Apple's commission (the project's Small Business Program setting,
-- the one-year rule) and after the tax of its storefront on its purchase day (the operator's rates known when the
-- event is derived; `tax`: the tax included in the price, 0 without a rate) and net after refunds, in milli-units of
-- that currency; proceeds_basis 'after_tax' once the operator has configured any tax rate, else 'before_tax'; '{}'
-- for a transaction without a price.
-- Read from revenue_transactions, which the deriver brings up to date before it writes the batch's events.
-- PL/pgSQL, not SQL, for Citus: as bouncer_webhook_copy_entitlements says.
CREATE OR REPLACE FUNCTION bouncer_webhook_money(p_project_id uuid, p_environment text, p_transaction_id text)
RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_money jsonb;
BEGIN
    PERFORM bouncer_citus_allow_nested();
    SELECT jsonb_build_object('price', v.price_milli, 'currency', v.currency, 'tax', bouncer_money_tax(v.price_milli,
            x.rate), 'proceeds', m.proceeds, 'net', m.proceeds - bouncer_money_share(m.proceeds, v.refund_milli_percent),
        'proceeds_basis', CASE WHEN EXISTS (SELECT 1 FROM tax_rates) THEN 'after_tax' ELSE 'before_tax' END)
    INTO v_money
    FROM revenue_transactions v
    LEFT JOIN revenue_settings s ON s.project_id = v.project_id
    CROSS JOIN LATERAL (SELECT bouncer_money_tax_rate(v.storefront, (v.purchase_date AT TIME ZONE 'UTC')::date)
        AS rate) x
    CROSS JOIN LATERAL (SELECT bouncer_money_proceeds(v.price_milli, bouncer_money_commission(
        COALESCE(s.small_business_program, false), v.type = 'Auto-Renewable Subscription',
        v.paid_days_before), x.rate) AS proceeds) m
    WHERE v.project_id = p_project_id AND v.environment = p_environment AND v.transaction_id = p_transaction_id
      AND v.currency <> '' AND NOT v.trial;
    RETURN COALESCE(v_money, '{}'::jsonb);
END;
$$;
