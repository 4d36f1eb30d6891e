-- realized_ltv's customer of a purchase (schema/0086): the user holding it now, its latest binding not revoked (by
-- bound_at, then user id), as 'u:' || user id; else the purchase itself, 'p:' || original transaction id. One probe of
-- subscriptions_original_idx. The chart's statement under a filter says the same in SQL.
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_customer(p_project_id uuid, p_environment text, p_original_id text)
RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_user text;
BEGIN
    SELECT s.user_id INTO v_user FROM subscriptions s
    WHERE s.project_id = p_project_id AND s.environment = p_environment AND s.original_transaction_id = p_original_id
      AND s.revoked_at IS NULL
    ORDER BY s.bound_at DESC, s.user_id LIMIT 1;
    RETURN COALESCE('u:' || v_user, 'p:' || p_original_id);
END;
$$;
