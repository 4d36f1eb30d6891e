-- The users holding a purchase (an index probe of subscriptions_original_idx), for calls that did not lock them.
--
-- PL/pgSQL, not SQL: an SQL function with an aggregate is never inlined, so each call from a PL/pgSQL statement
-- (the log append) parsed and planned its query again (see bouncer_change_snapshot); PL/pgSQL keeps the plan for
-- the session.
CREATE OR REPLACE FUNCTION bouncer_purchase_holders(p_project_id uuid, p_environment text, p_original_transaction_id text)
RETURNS text[]
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_holders text[];
BEGIN
    SELECT COALESCE(array_agg(s.user_id ORDER BY s.user_id COLLATE "C"), '{}') INTO v_holders FROM subscriptions s
    WHERE s.project_id = p_project_id AND s.environment = p_environment
      AND s.original_transaction_id = p_original_transaction_id AND s.revoked_at IS NULL;
    RETURN v_holders;
END;
$$;
