-- Adds an event to the outbox in the caller's transaction, if the project's webhook wants this type (ping always);
-- returns its evt_ id, or NULL when nothing was written. Takes the user's advisory lock first, so one user's events
-- are numbered in commit order. The public function other features call (manual grants, erase).
CREATE OR REPLACE FUNCTION bouncer_emit_event(p_project_id uuid, p_user_id text, p_type text, p_data jsonb) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_events text[];
    v_id text;
BEGIN
    SELECT w.events INTO v_events FROM webhook_endpoints w WHERE w.project_id = p_project_id;
    IF NOT FOUND OR (v_events IS NOT NULL AND p_type <> 'ping' AND NOT (p_type = ANY (v_events))) THEN
        RETURN NULL;
    END IF;
    IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(16979, hashtext(p_project_id::text || '/' || p_user_id));
    END IF;
    v_id := 'evt_' || replace(gen_random_uuid()::text, '-', '');
    INSERT INTO webhook_events (project_id, id, type, user_id, data, created_at, next_attempt_at, retry_window_start)
    VALUES (p_project_id, v_id, p_type, p_user_id, COALESCE(p_data, '{}'::jsonb), now(), now(), now());
    -- Wakes idle dispatchers (LISTEN bouncer_webhook_events); delivered at commit, dropped on rollback.
    PERFORM pg_notify('bouncer_webhook_events', '');
    RETURN v_id;
END;
$$;
