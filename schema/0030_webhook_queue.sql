-- 0030_webhook_queue: the dispatcher claims from a table of the pending events only, not from webhook_events.
--
-- webhook_events keeps every event (the deliveries list reads them), so it only grows, and autovacuum visits it
-- ever more rarely. Each delivery leaves dead entries in webhook_events_due_idx at the front of its order (the
-- oldest next_attempt_at), where no insert ever lands, so nothing but VACUUM removes them; every claim stepped over
-- all of them: 15-25 ms a claim after 300,000 deliveries. webhook_queue holds one row per pending event (inserted,
-- updated and deleted with it by the trigger below), so its dead entries are bounded by its own size, and it is
-- small enough for autovacuum to keep up (the thresholds below).
CREATE TABLE webhook_queue (
    project_id       uuid        NOT NULL,
    seq              bigint      NOT NULL,
    user_id          text        NULL,
    next_attempt_at  timestamptz NOT NULL,
    PRIMARY KEY (project_id, seq),
    FOREIGN KEY (project_id, seq) REFERENCES webhook_events (project_id, seq) ON DELETE CASCADE
) WITH (autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_threshold = 1000);
-- The dispatcher's claim: due events, oldest first, across projects.
CREATE INDEX webhook_queue_due_idx ON webhook_queue (next_attempt_at, seq);
-- Per-user order: "is an earlier event of this user still pending?"
CREATE INDEX webhook_queue_user_idx ON webhook_queue (project_id, user_id, seq) WHERE user_id IS NOT NULL;

INSERT INTO webhook_queue (project_id, seq, user_id, next_attempt_at)
SELECT project_id, seq, user_id, next_attempt_at FROM webhook_events WHERE status = 'pending';

-- Placeholder: schema/functions/bouncer_webhook_queue_sync.sql replaces it in this migration's commit.
CREATE FUNCTION bouncer_webhook_queue_sync() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
-- Not on the lease columns: a claim writes only those, and the queue does not follow them.
CREATE TRIGGER webhook_events_queue AFTER INSERT OR UPDATE OF status, next_attempt_at, user_id ON webhook_events
    FOR EACH ROW EXECUTE FUNCTION bouncer_webhook_queue_sync();
