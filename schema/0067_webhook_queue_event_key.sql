-- 0067_webhook_queue_event_key: a queue row no longer checks its event's row when it enters.
--
-- The foreign key of 0030 ran a check per head entering the queue (a query locking the event's row FOR KEY SHARE,
-- 4 buffers; ~1.6 per delivered event through bench/api's drain) and its cascade removed a deleted event's queue
-- row. Every writer of the queue inserts a head it has just read or written in webhook_events, holding the user's
-- lock (16979) for a user's event; bouncer_webhook_queue_deleted, the statement trigger after every DELETE on
-- webhook_events (cascades from projects included), now deletes the deleted events' queue rows itself, after
-- taking the same locks, so a head moved in concurrently is committed and seen when it deletes.
ALTER TABLE webhook_queue DROP CONSTRAINT webhook_queue_project_id_seq_fkey;
