-- The fields of a purchase the overview counts (purchase_changes.data.tx's p_old / p_new, schema/0035): its
-- product and expiry while it has one and is not revoked (an expiration of its latest transaction), else NULL.
CREATE OR REPLACE FUNCTION bouncer_overview_purchase_fields(p purchases) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p.expires_date IS NOT NULL AND p.revocation_date IS NULL
        THEN jsonb_build_object('product_id', p.product_id, 'expires_date', p.expires_date) END
$$;
