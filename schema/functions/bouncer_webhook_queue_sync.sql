-- Keeps webhook_queue equal to the pending rows of webhook_events, in the writer's transaction (trigger
-- webhook_events_queue, 0030): an event enters when it is written or retried by hand, follows its retry time, and
-- leaves when delivered or failed. A deleted event leaves by the foreign key's cascade.
CREATE OR REPLACE FUNCTION bouncer_webhook_queue_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.status = 'pending' THEN
        IF NEW.status = 'pending' THEN
            UPDATE webhook_queue SET user_id = NEW.user_id, next_attempt_at = NEW.next_attempt_at
            WHERE project_id = NEW.project_id AND seq = NEW.seq;
        ELSE
            DELETE FROM webhook_queue WHERE project_id = OLD.project_id AND seq = OLD.seq;
        END IF;
    ELSIF NEW.status = 'pending' THEN
        INSERT INTO webhook_queue (project_id, seq, user_id, next_attempt_at)
        VALUES (NEW.project_id, NEW.seq, NEW.user_id, NEW.next_attempt_at);
    END IF;
    RETURN NULL;
END;
$$;
