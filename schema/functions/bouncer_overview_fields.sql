-- The fields of a transaction the overview counts (purchase_changes.data.tx, schema/0035): its events'
-- instants and measures (bouncer_overview_events; the environment is the log row's), and for a free trial its ids
-- (overview_trials). STABLE: a timestamptz in JSON is written in the session's time zone.
CREATE OR REPLACE FUNCTION bouncer_overview_fields(t transactions) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('product_id', t.product_id, 'type', t.type, 'currency', t.currency,
        'price_milli', t.price_milli, 'renewal', t.is_renewal, 'purchase_date', t.purchase_date,
        'expires_date', t.expires_date, 'revocation_date', t.revocation_date)
        || CASE WHEN t.offer_discount_type = 'FREE_TRIAL' THEN jsonb_build_object('trial_id', t.transaction_id,
               'original_id', t.original_transaction_id) ELSE '{}' END
$$;
