-- A purchase's status at an instant. The same rule as StatusRules.evaluate(PurchaseState, at:), which answers GET
-- requests; StorageTests.RuleTableTests runs both on the same stored rows at every boundary instant.
CREATE OR REPLACE FUNCTION bouncer_purchase_status(p purchases, p_at timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN p.revocation_date IS NOT NULL THEN 'revoked'
        WHEN p.expires_date IS NULL OR p.expires_date > p_at THEN 'active'
        WHEN p.type = 'Auto-Renewable Subscription' AND p.grace_period_expires_date > p_at
             AND p.grace_period_expires_date > p.expires_date THEN 'active'
        ELSE 'expired' END
$$;
