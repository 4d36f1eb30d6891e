-- 0043_webhook_queue_trigger_when: the queue's row trigger no longer runs for the deliveries the dispatcher records.
--
-- bouncer_webhook_complete moves the queue itself for a whole batch (the finished heads leave, their users' next
-- events enter) and then updates the events; 0030's trigger then ran once per delivered or failed event to find no
-- queue row (a function call and a DELETE per event). The update of an attempt's outcome is the one update that
-- writes last_attempt_at; when it leaves the event pending (a retry), the trigger still makes the queue row due at
-- the retry time. Every other update (a manual retry, the erase's, a test's) runs it as before.
DROP TRIGGER webhook_events_queue ON webhook_events;
CREATE TRIGGER webhook_events_queue AFTER INSERT ON webhook_events
    FOR EACH ROW EXECUTE FUNCTION bouncer_webhook_queue_sync();
-- Not on the lease columns: a claim writes only those, and the queue does not follow them.
CREATE TRIGGER webhook_events_queue_moved AFTER UPDATE OF status, next_attempt_at, user_id ON webhook_events
    FOR EACH ROW WHEN (NEW.status = 'pending' OR NEW.last_attempt_at IS NOT DISTINCT FROM OLD.last_attempt_at)
    EXECUTE FUNCTION bouncer_webhook_queue_sync();
