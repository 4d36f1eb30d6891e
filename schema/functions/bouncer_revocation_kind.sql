-- Why a revoked purchase was revoked: a refund, or a revocation (Family Sharing revoke, upgrade).
CREATE OR REPLACE FUNCTION bouncer_revocation_kind(p_reason int, p_type text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_type = 'FAMILY_REVOKE' THEN 'revoked'
        WHEN p_reason IS NOT NULL OR p_type IN ('REFUND_FULL', 'REFUND_PRORATED') THEN 'refunded'
        ELSE 'revoked' END
$$;
