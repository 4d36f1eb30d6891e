-- After an INSERT on webhook_events (statement trigger webhook_events_queue_added, 0045): each new pending event
-- whose user has no head enters webhook_queue, in the writer's transaction; a user-less event (ping) is its own head.
-- The writer holds each user's lock (16979; bouncer_emit_event, the deriver's batch), under which a user's events
-- are numbered, so a new event is its user's newest: of a statement's events of one user only the oldest can enter
-- (the rows are offered in seq order; ON CONFLICT keeps the first).
CREATE OR REPLACE FUNCTION bouncer_webhook_queue_added() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_queue (project_id, seq, user_id, next_attempt_at, attempts)
    SELECT a.project_id, a.seq, a.user_id, a.next_attempt_at, a.attempts FROM added a
    WHERE a.status = 'pending'
    ORDER BY a.seq
    ON CONFLICT (project_id, user_id) WHERE user_id IS NOT NULL DO NOTHING;
    RETURN NULL;
END;
$$;
