-- 0068_webhook_events_hot_delivery: a delivery updates its event in place (HOT: no new index entries).
--
-- A delivery's update (pending -> delivered, bouncer_webhook_complete) wrote a new entry in each of webhook_events'
-- three indexes: PostgreSQL updates a row in place only when no column an index names changes and the row's page has
-- room, and `status` was named by webhook_events_failed_idx's predicate (0041). Failed events are indexed by
-- failed_at now, which a trigger sets only when an event enters or leaves the failed status; and a fillfactor of 60
-- leaves room on each new page for its rows' next versions. A drain of 10,000 events (bench/README.md, "Fifth
-- round"): 81 % of the deliveries HOT (0 before; 100 % at a fillfactor of 50, 56 % at 70), 10 % fewer buffers. The
-- cost: new pages of webhook_events are filled to 60 %.
ALTER TABLE webhook_events ADD COLUMN failed_at timestamptz NULL;
UPDATE webhook_events SET failed_at = COALESCE(last_attempt_at, created_at) WHERE status = 'failed';
DROP INDEX webhook_events_failed_idx;
CREATE INDEX webhook_events_failed_idx ON webhook_events (project_id, seq) WHERE failed_at IS NOT NULL;
ALTER TABLE webhook_events SET (fillfactor = 60);

-- Placeholder: schema/functions/bouncer_webhook_failed_at.sql replaces it in this migration's commit.
CREATE FUNCTION bouncer_webhook_failed_at() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER webhook_events_failed_at BEFORE INSERT ON webhook_events
    FOR EACH ROW WHEN (NEW.status = 'failed') EXECUTE FUNCTION bouncer_webhook_failed_at();
CREATE TRIGGER webhook_events_failed_at_moved BEFORE UPDATE OF status ON webhook_events
    FOR EACH ROW WHEN ((OLD.status = 'failed') IS DISTINCT FROM (NEW.status = 'failed'))
    EXECUTE FUNCTION bouncer_webhook_failed_at();
