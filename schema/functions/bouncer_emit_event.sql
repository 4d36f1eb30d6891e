-- Adds an event to the outbox in the caller's transaction, if the project's webhook wants this type (ping always);
-- returns its evt_ id, or NULL when nothing was written: bouncer_emit_events with one event (its lock, its NOTIFY).
-- The public function other features call (manual grants, erase).
CREATE OR REPLACE FUNCTION bouncer_emit_event(p_project_id uuid, p_user_id text, p_type text, p_data jsonb) RETURNS text
LANGUAGE sql VOLATILE AS $$
    SELECT bouncer_emit_events(p_project_id, ARRAY[p_user_id], ARRAY[p_type], ARRAY[p_data]) LIMIT 1
$$;
