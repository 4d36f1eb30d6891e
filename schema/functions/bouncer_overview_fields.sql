-- The fields of a transaction the overview counts (purchase_changes.data.tx, schema/0035): its events'
-- instants and measures (bouncer_overview_events; the environment is the log row's), for a free trial its ids
-- (overview_trials), and its refund's kind and share (the revenue roll-up's). STABLE: a timestamptz in JSON is
-- written in the session's time zone.
CREATE OR REPLACE FUNCTION bouncer_overview_fields(t transactions) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('product_id', t.product_id, 'type', t.type, 'currency', t.currency,
        'price_milli', t.price_milli, 'renewal', t.is_renewal, 'purchase_date', t.purchase_date,
        'expires_date', t.expires_date, 'revocation_date', t.revocation_date)
        || CASE WHEN t.offer_discount_type = 'FREE_TRIAL' THEN jsonb_build_object('trial_id', t.transaction_id,
               'original_id', t.original_transaction_id) ELSE '{}' END
        -- And a refund's kind and share when Apple gave them: a prorated refund keeps access (no revocation_date), and
        -- the revenue roll-up (bouncer_revenue_roll_up, from this fact's purchase dates) must still see it arrive.
        || CASE WHEN t.revocation_type IS NOT NULL OR t.revocation_percentage IS NOT NULL
               THEN jsonb_build_object('revocation_type', t.revocation_type,
                   'revocation_percentage', t.revocation_percentage) ELSE '{}' END
$$;
