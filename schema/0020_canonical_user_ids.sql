-- One spelling per user where an appAccountToken can name one (issue 21). Under app_account_token_policy
-- require_match or prefer, a user id that is a UUID is stored and read in Apple's form, lowercase
-- (AccountBindingRules.canonicalUserId): Swift's UUID().uuidString is upper case, and two spellings of one UUID must
-- never be two holders of one purchase. Rows written before (or while the project was on ignore) are rewritten by
-- bouncer_canonical_user_ids: here for the projects already on those policies, and by the project store in the
-- transaction that switches a project to one.

CREATE FUNCTION bouncer_canonical_user_ids(p_project_id uuid, p_now timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    -- The hyphenated form Foundation's UUID(uuidString:) accepts, in any letter case.
    v_uuid constant text := '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';
BEGIN
    -- A live binding under another spelling moves to the canonical id: the canonical row is bound (or re-activated),
    -- then the other spelling's revoked. Both go through the subscription triggers, so webhook state follows.
    -- DISTINCT ON: two other spellings of one UUID holding one purchase make one canonical row.
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

SELECT bouncer_canonical_user_ids(id, now()) FROM projects
WHERE app_account_token_policy IN ('require_match', 'prefer');
