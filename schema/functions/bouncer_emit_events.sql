-- Adds events (p_user_ids[i]'s p_types[i] with p_data[i], in array order) to the outbox in the caller's transaction,
-- those the project's webhook wants (ping always), in one INSERT; returns their evt_ ids in that order, none without
-- a webhook. Takes the users' advisory locks first (a caller with several users holds them already, in its order),
-- so one user's events are numbered in commit order; the rows get their seq in array order (the INSERT numbers the
-- sorted rows). One NOTIFY wakes idle dispatchers
-- (LISTEN bouncer_webhook_events), delivered at commit, dropped on rollback. bouncer_emit_event is its one-event form.
CREATE OR REPLACE FUNCTION bouncer_emit_events(p_project_id uuid, p_user_ids text[], p_types text[], p_data jsonb[])
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_events text[];
BEGIN
    SELECT w.events INTO v_events FROM webhook_endpoints w WHERE w.project_id = p_project_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(16979, hashtext(p_project_id::text || '/' || u.user_id))
    FROM unnest(p_user_ids) WITH ORDINALITY AS u(user_id, nth) WHERE u.user_id IS NOT NULL ORDER BY u.nth;
    RETURN QUERY
    INSERT INTO webhook_events (project_id, id, type, user_id, data, created_at, next_attempt_at, retry_window_start)
    SELECT p_project_id, 'evt_' || replace(gen_random_uuid()::text, '-', ''), x.type, x.user_id,
        COALESCE(x.data, '{}'::jsonb), now(), now(), now()
    FROM unnest(p_user_ids, p_types, p_data) WITH ORDINALITY AS x(user_id, type, data, ord)
    WHERE v_events IS NULL OR x.type = 'ping' OR x.type = ANY (v_events)
    ORDER BY x.ord
    RETURNING webhook_events.id;
    IF FOUND THEN
        PERFORM pg_notify('bouncer_webhook_events', '');
    END IF;
END;
$$;
