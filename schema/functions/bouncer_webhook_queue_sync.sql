-- Keeps webhook_queue equal to each user's head event (the oldest pending one; a user-less event is its own head),
-- in the writer's transaction (triggers webhook_events_queue on INSERT and webhook_events_queue_moved on UPDATE;
-- 0043: not for an attempt's outcome that leaves the event delivered or failed: bouncer_webhook_complete moves the
-- queue for those itself). A queue row is due at the event's retry time, or while leased (the claim writes the lease
-- on the queue row only) when its lease ends. An event enters when it is written with no pending event of its user
-- before it, or retried by hand ahead of its user's head; when a head is delivered or failed its user's next pending
-- event enters. A DELETE is bouncer_webhook_queue_deleted's.
--
-- Moving a head on takes the user's lock (16979) first, the one bouncer_emit_event holds until its commit, and looks
-- for the next event in a later statement (a new snapshot): an event written for the user meanwhile is either
-- committed and seen, or written after this commit and finds no head, so it enters itself. The dispatcher takes the
-- lock with pg_try_advisory_xact_lock before (bouncer_webhook_complete): it never waits on a deriver.
CREATE OR REPLACE FUNCTION bouncer_webhook_queue_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_was boolean := TG_OP = 'UPDATE' AND OLD.status = 'pending';
    v_is boolean := NEW.status = 'pending';
BEGIN
    IF v_was AND v_is AND OLD.user_id IS NOT DISTINCT FROM NEW.user_id THEN
        -- Due again at its retry time (only a head has a row); a manual retry of a leased event waits for the lease.
        UPDATE webhook_queue q SET next_attempt_at = CASE WHEN q.lease_owner IS NULL THEN NEW.next_attempt_at
                                                          ELSE GREATEST(q.next_attempt_at, NEW.next_attempt_at) END
        WHERE q.project_id = NEW.project_id AND q.seq = NEW.seq;
        RETURN NULL;
    END IF;

    IF v_was THEN
        DELETE FROM webhook_queue WHERE project_id = OLD.project_id AND seq = OLD.seq;
        IF FOUND AND OLD.user_id IS NOT NULL THEN
            PERFORM pg_advisory_xact_lock(16979, hashtext(OLD.project_id::text || '/' || OLD.user_id));
            INSERT INTO webhook_queue (project_id, seq, user_id, next_attempt_at, attempts)
            SELECT e.project_id, e.seq, e.user_id, e.next_attempt_at, e.attempts FROM webhook_events e
            WHERE e.project_id = OLD.project_id AND e.user_id = OLD.user_id AND e.seq > OLD.seq
              AND e.status = 'pending'
            ORDER BY e.project_id, e.user_id, e.seq LIMIT 1
            ON CONFLICT DO NOTHING;
        END IF;
    END IF;

    IF v_is AND NOT (v_was AND OLD.user_id IS NOT DISTINCT FROM NEW.user_id) THEN
        IF NEW.user_id IS NOT NULL AND TG_OP = 'UPDATE' THEN
            -- Retried by hand: it goes before a later head of its user.
            PERFORM pg_advisory_xact_lock(16979, hashtext(NEW.project_id::text || '/' || NEW.user_id));
            DELETE FROM webhook_queue q
            WHERE q.project_id = NEW.project_id AND q.user_id = NEW.user_id AND q.seq > NEW.seq;
        END IF;
        -- A new event is its user's newest (bouncer_emit_event numbers them under the user's lock): it enters only
        -- when the user has no head.
        INSERT INTO webhook_queue (project_id, seq, user_id, next_attempt_at, attempts)
        VALUES (NEW.project_id, NEW.seq, NEW.user_id, NEW.next_attempt_at, NEW.attempts)
        ON CONFLICT (project_id, user_id) WHERE user_id IS NOT NULL DO NOTHING;
    END IF;
    RETURN NULL;
END;
$$;
