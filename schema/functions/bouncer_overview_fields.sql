-- The fields of a transaction the overview counts (purchase_changes.data.tx, schema/0035): the rollup's key (the
-- environment is the log row's) and what overview_days sums.
CREATE OR REPLACE FUNCTION bouncer_overview_fields(t transactions) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('product_id', t.product_id, 'type', t.type, 'currency', t.currency,
        'price_milli', t.price_milli, 'renewal', t.is_renewal, 'purchase_date', t.purchase_date,
        'expires_date', t.expires_date, 'revocation_date', t.revocation_date)
$$;
