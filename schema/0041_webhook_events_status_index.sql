-- 0041_webhook_events_status_index: no index of webhook_events follows the delivery status but a small one of the
-- failed events.
--
-- webhook_events_status_idx (project_id, status, seq DESC) had one reader, the deliveries list filtered by status,
-- and two costs: every delivery wrote a new entry in it (pending -> delivered), and the planner took it for a finished
-- head's successor (project, user, seq > head, pending: a generic plan walked every pending event of the project after
-- the head, filtering the user: 0.2-0.3 ms per finished head during a burst, one entry per user on
-- webhook_events_user_seq_idx). The deliveries list reads instead (PostgresWebhookStore.deliveries):
--   pending:   the project's heads in webhook_queue and each head's user's pending events from it (every pending
--              event is at or after its user's head; a user-less one is its own head);
--   failed:    webhook_events_failed_idx (failed events are few; an event enters it once and leaves on a manual retry);
--   delivered: the primary key, newest first (delivered events are almost all of them).
DROP INDEX webhook_events_status_idx;
CREATE INDEX webhook_events_failed_idx ON webhook_events (project_id, seq) WHERE status = 'failed';
