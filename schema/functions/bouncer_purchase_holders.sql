-- The users holding a purchase (an index probe of subscriptions_original_idx), for calls that did not lock them.
CREATE OR REPLACE FUNCTION bouncer_purchase_holders(p_project_id uuid, p_environment text, p_original_transaction_id text)
RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(array_agg(s.user_id ORDER BY s.user_id COLLATE "C"), '{}') FROM subscriptions s
    WHERE s.project_id = p_project_id AND s.environment = p_environment
      AND s.original_transaction_id = p_original_transaction_id AND s.revoked_at IS NULL
$$;
