-- When an active purchase stops being active if nothing else happens (NULL: never), including a grace period:
-- StatusRules' accessEndsAt, checked against it by StorageTests.RuleTableTests.
CREATE OR REPLACE FUNCTION bouncer_purchase_access_end(p purchases) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p.expires_date IS NULL THEN NULL
        ELSE GREATEST(p.expires_date,
            CASE WHEN p.type = 'Auto-Renewable Subscription' THEN p.grace_period_expires_date END) END
$$;
