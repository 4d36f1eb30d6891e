-- One spelling per user where an appAccountToken can name one (issue 21). Under app_account_token_policy
-- require_match or prefer, a user id that is a UUID is stored and read in Apple's form, lowercase
-- (AccountBindingRules.canonicalUserId): rewrites the project's bindings and grants held under other spellings to
-- the canonical id, appending each moved binding to the change log. Called by the project store in the transaction
-- that switches a project to one of those policies.
CREATE OR REPLACE FUNCTION bouncer_canonical_user_ids(p_project_id uuid, p_now timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    -- The hyphenated form Foundation's UUID(uuidString:) accepts, in any letter case.
    v_uuid constant text := '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';
    r record;
    v_p purchases;
    v_new bouncer_purchase_snapshot;
BEGIN
    -- log: the other spelling loses the binding (not a transfer: no purchase.transferred), the canonical id holds it.
    -- One row at a time, each purchase read into a variable and its snapshot taken here: on Citus a statement's
    -- whole-row reference `p` would run bouncer_change_snapshot on the worker, on the shard's row type
    -- (deploy/citus.md). Switching the policy is rare; the rows keep the order of one INSERT ... SELECT.
    FOR r IN
        SELECT s.environment, s.original_transaction_id, s.user_id FROM subscriptions s
        WHERE s.project_id = p_project_id AND s.revoked_at IS NULL AND s.user_id ~ v_uuid
          AND s.user_id <> lower(s.user_id)
        ORDER BY s.bound_at, s.user_id COLLATE "C"
    LOOP
        SELECT p.* INTO v_p FROM purchases p
        WHERE p.project_id = p_project_id AND p.environment = r.environment
          AND p.original_transaction_id = r.original_transaction_id;
        CONTINUE WHEN NOT FOUND;
        v_new := bouncer_change_snapshot(v_p);
        INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, purchase_after,
            created_at)
        VALUES (p_project_id, r.environment, r.original_transaction_id, jsonb_build_object('revoked',
            jsonb_build_array(r.user_id), 'bound', lower(r.user_id)), v_new, now());
    END LOOP;
    -- A live binding under another spelling moves to the canonical id: the canonical row is bound (or re-activated),
    -- then the other spelling's revoked. DISTINCT ON: two other spellings of one UUID holding one purchase make one
    -- canonical row.
    INSERT INTO subscriptions AS s (project_id, user_id, environment, original_transaction_id, device_id,
        bound_at, revoked_at, updated_at)
    SELECT DISTINCT ON (lower(o.user_id), o.environment, o.original_transaction_id)
        o.project_id, lower(o.user_id), o.environment, o.original_transaction_id, o.device_id, o.bound_at, NULL, p_now
    FROM subscriptions o
    WHERE o.project_id = p_project_id AND o.revoked_at IS NULL AND o.user_id ~ v_uuid AND o.user_id <> lower(o.user_id)
    ORDER BY lower(o.user_id), o.environment, o.original_transaction_id, o.bound_at
    ON CONFLICT (project_id, user_id, environment, original_transaction_id) DO UPDATE SET
        bound_at = CASE WHEN s.revoked_at IS NULL THEN s.bound_at ELSE EXCLUDED.bound_at END,
        revoked_at = NULL,
        device_id = COALESCE(s.device_id, EXCLUDED.device_id),
        updated_at = EXCLUDED.updated_at;
    UPDATE subscriptions SET revoked_at = p_now, updated_at = p_now
    WHERE project_id = p_project_id AND revoked_at IS NULL AND user_id ~ v_uuid AND user_id <> lower(user_id);

    -- App transactions and grants are keyed by their own ids: the user id is an attribute, rewritten in place.
    UPDATE app_transactions SET user_id = lower(user_id)
    WHERE project_id = p_project_id AND user_id ~ v_uuid AND user_id <> lower(user_id);
    UPDATE grants SET user_id = lower(user_id)
    WHERE project_id = p_project_id AND user_id ~ v_uuid AND user_id <> lower(user_id);
END;
$$;
