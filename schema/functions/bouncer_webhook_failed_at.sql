-- Keeps webhook_events.failed_at (0068) set exactly while an event is failed (triggers webhook_events_failed_at and
-- webhook_events_failed_at_moved, which run only when an event enters or leaves the failed status): when it fails,
-- its last attempt's time (now() without one); cleared when a manual retry makes it pending again.
-- webhook_events_failed_idx is on failed_at, so a delivery changes no column an index names and can be a HOT update.
CREATE OR REPLACE FUNCTION bouncer_webhook_failed_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.failed_at := CASE WHEN NEW.status = 'failed' THEN COALESCE(NEW.last_attempt_at, now()) END;
    RETURN NEW;
END;
$$;
