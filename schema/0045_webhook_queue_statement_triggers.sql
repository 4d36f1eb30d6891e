-- 0045_webhook_queue_statement_triggers: webhook_queue follows webhook_events by statement, not by row.
--
-- Under 0030/0031 a row trigger moved each finished head's user on (a DELETE, the user's lock and an INSERT … SELECT
-- per event, each its own executor start): the dispatcher's batch of outcomes (bouncer_webhook_complete) ran three
-- statements per outcome, and each event the deriver wrote one INSERT into the queue. Now one trigger per statement
-- reads the statement's transition tables and does the same set-based (schema/functions/bouncer_webhook_queue_sync.sql
-- for updates, bouncer_webhook_queue_added.sql for inserts); what the queue holds is unchanged (each user's head).
-- PostgreSQL allows transition tables only on single-event triggers without a column list, so the update trigger
-- fires for every UPDATE of webhook_events (the claim writes webhook_queue only; erase's anonymising updates are
-- rare), and the insert trigger is a trigger of its own.

DROP TRIGGER webhook_events_queue ON webhook_events;

-- Placeholders: the files replace them in this migration's commit.
CREATE FUNCTION bouncer_webhook_queue_added() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;

CREATE TRIGGER webhook_events_queue_added AFTER INSERT ON webhook_events
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION bouncer_webhook_queue_added();
CREATE TRIGGER webhook_events_queue AFTER UPDATE ON webhook_events
    REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows FOR EACH STATEMENT
    EXECUTE FUNCTION bouncer_webhook_queue_sync();
