-- 0031_webhook_queue_heads: webhook_queue holds each user's head event only (the oldest pending one) and its lease,
-- and a leased head is not due until its lease ends, so the claim takes the first due rows of its index and nothing
-- else.
--
-- Under 0030 the queue held every pending event; the claim stepped over events leased by other threads and events
-- blocked behind an earlier one of their user (a NOT EXISTS per candidate), 2.15 ms a claim through a drain. Now
-- the trigger (schema/functions/bouncer_webhook_queue_sync.sql) moves a user's next pending event in when the head
-- is delivered or failed, in that transaction; a user-less event (ping) is its own head.

DROP INDEX webhook_queue_user_idx;

DELETE FROM webhook_queue q
WHERE q.user_id IS NOT NULL
  AND EXISTS (SELECT 1 FROM webhook_queue p
              WHERE p.project_id = q.project_id AND p.user_id = q.user_id AND p.seq < q.seq);
-- The lease moves to the queue row: a claim writes only this small row, not the event (whose data it would copy
-- into the WAL again). attempts counts the event's claims, as webhook_events.attempts did; webhook_events keeps the
-- attempts recorded, and its lease columns are no longer written.
ALTER TABLE webhook_queue ADD COLUMN lease_owner text NULL, ADD COLUMN attempts int NOT NULL DEFAULT 0;
UPDATE webhook_queue q SET attempts = e.attempts,
    lease_owner = CASE WHEN e.lease_until > now() THEN e.lease_owner END,
    next_attempt_at = GREATEST(q.next_attempt_at, e.lease_until)
FROM webhook_events e
WHERE e.project_id = q.project_id AND e.seq = q.seq;

-- One head per user, and the arbiter of the trigger's INSERT … ON CONFLICT.
CREATE UNIQUE INDEX webhook_queue_head_idx ON webhook_queue (project_id, user_id) WHERE user_id IS NOT NULL;

-- A head's successor (the user's next pending event after it) and erase (a user's events): one index for both,
-- instead of webhook_events_user_idx (project_id, user_id) and the pending-only webhook_events_user_pending_idx.
CREATE INDEX webhook_events_user_seq_idx ON webhook_events (project_id, user_id, seq) WHERE user_id IS NOT NULL;
DROP INDEX webhook_events_user_idx;
DROP INDEX webhook_events_user_pending_idx;
-- No reader since 0030 (the claim reads webhook_queue_due_idx); every event paid its insert.
DROP INDEX webhook_events_due_idx;

-- 0030's row trigger keeps its definition (its function's file changes); a DELETE is followed by a statement
-- trigger, which finds a new head for the users whose head went (the foreign key's cascade removed its queue row).
-- Placeholder: schema/functions/bouncer_webhook_queue_deleted.sql replaces it in this migration's commit.
CREATE FUNCTION bouncer_webhook_queue_deleted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER webhook_events_queue_deleted AFTER DELETE ON webhook_events
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION bouncer_webhook_queue_deleted();
