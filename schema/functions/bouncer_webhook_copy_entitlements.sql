-- 0012's bouncer_webhook_user_entitlements over the copy: the entitlements of the user's announced-active
-- purchases under the current product mapping, each with the purchase whose access lasts longest (NULL: forever;
-- ties by original transaction id, then environment). The products held are found by skipping through
-- webhook_purchase_states_held_idx (a loose index scan), then each one's best purchase is its first entry.
-- Sandbox access (schema/0060, Domain's SandboxAccessRules.withholds): under 'allowlist' a Sandbox purchase of a user
-- outside sandbox_allowed_user_ids grants nothing.
-- PL/pgSQL, not SQL: Citus plans no SQL function that reads a distributed table (its statements are planned with
-- their parameters, or inlined where Citus does not see them); and bouncer_citus_allow_nested, for the statements of
-- the seed and the deriver that call it on the tenant's worker (deploy/citus.md).
CREATE OR REPLACE FUNCTION bouncer_webhook_copy_entitlements(p_project_id uuid, p_user_id text)
RETURNS TABLE (entitlement text, environment text, original_transaction_id text, product_id text,
    expires_at timestamptz)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    PERFORM bouncer_citus_allow_nested();
    RETURN QUERY
    WITH RECURSIVE held(product_id) AS (
        (SELECT st.product_id FROM webhook_purchase_states st
         WHERE st.project_id = p_project_id AND st.user_id = p_user_id AND st.status = 'active'
         ORDER BY st.product_id LIMIT 1)
        UNION ALL
        SELECT (SELECT st.product_id FROM webhook_purchase_states st
                WHERE st.project_id = p_project_id AND st.user_id = p_user_id AND st.status = 'active'
                  AND st.product_id > h.product_id
                ORDER BY st.product_id LIMIT 1)
        FROM held h WHERE h.product_id IS NOT NULL
    )
    SELECT DISTINCT ON (e.entitlement) e.entitlement, b.environment, b.original_transaction_id, b.product_id,
        b.access_ends_at
    FROM held h
    JOIN products pr ON pr.project_id = p_project_id AND pr.product_id = h.product_id
    CROSS JOIN LATERAL (SELECT st.environment, st.original_transaction_id, st.product_id, st.access_ends_at
        FROM webhook_purchase_states st
        WHERE st.project_id = p_project_id AND st.user_id = p_user_id AND st.status = 'active'
          AND st.product_id = h.product_id
          AND NOT (st.environment = 'Sandbox' AND EXISTS (SELECT 1 FROM projects p WHERE p.id = p_project_id
                       AND p.sandbox_access = 'allowlist' AND NOT p_user_id = ANY (p.sandbox_allowed_user_ids)))
        ORDER BY st.access_ends_at DESC NULLS FIRST, st.original_transaction_id COLLATE "C", st.environment COLLATE "C"
        LIMIT 1) b
    CROSS JOIN LATERAL unnest(pr.entitlements) AS e(entitlement)
    ORDER BY e.entitlement, b.access_ends_at DESC NULLS FIRST, b.original_transaction_id COLLATE "C",
        b.environment COLLATE "C";
END;
$$;
