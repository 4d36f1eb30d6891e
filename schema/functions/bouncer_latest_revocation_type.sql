-- The revocation type of a revoked purchase's latest transaction (bouncer_change_snapshot's revocation_type): one
-- probe of the transactions' primary key. PL/pgSQL, so its plan is kept for the session (see
-- bouncer_change_snapshot) and the snapshot, which calls it only for a revoked purchase, stays inlinable.
CREATE OR REPLACE FUNCTION bouncer_latest_revocation_type(p_project_id uuid, p_environment text,
    p_transaction_id text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_revocation_type text;
BEGIN
    SELECT t.revocation_type INTO v_revocation_type FROM transactions t
    WHERE t.project_id = p_project_id AND t.environment = p_environment AND t.transaction_id = p_transaction_id;
    RETURN v_revocation_type;
END;
$$;
