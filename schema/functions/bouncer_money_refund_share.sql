-- The milli-percent of a transaction refunded (Swift twin: Money.refundedMilliPercent): none while not revoked;
-- REFUND_PRORATED: its revocationPercentage (clamped to 0…100000); FAMILY_REVOKE: none (a family member lost
-- access, nobody was refunded); REFUND_FULL, or a revocation without a type (before December 2025): all of it.
CREATE OR REPLACE FUNCTION bouncer_money_refund_share(p_revocation_date timestamptz, p_revocation_type text,
    p_revocation_percentage bigint) RETURNS int
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p_revocation_date IS NULL THEN 0
        WHEN p_revocation_type = 'REFUND_PRORATED' THEN LEAST(GREATEST(COALESCE(p_revocation_percentage, 100000), 0), 100000)::int
        WHEN p_revocation_type = 'FAMILY_REVOKE' THEN 0
        ELSE 100000
    END
$$;
