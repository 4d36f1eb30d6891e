-- One user's refresh (bouncer_webhook_refresh_users, whose comment says what it does), at p_at, with p_targets. With
-- p_wait false, a user whose lock another transaction holds is skipped (returns false): the sweep's way to share the
-- work.
CREATE OR REPLACE FUNCTION bouncer_webhook_refresh_copy(p_project_id uuid, p_user_id text, p_at timestamptz,
    p_targets jsonb, p_wait boolean) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NOT p_wait AND NOT pg_try_advisory_xact_lock(16979, hashtext(p_project_id::text || '/' || p_user_id)) THEN
        RETURN false;
    END IF;
    PERFORM bouncer_webhook_refresh_users(p_project_id, ARRAY[p_at], ARRAY[p_user_id], ARRAY[p_targets]);
    RETURN true;
END;
$$;
