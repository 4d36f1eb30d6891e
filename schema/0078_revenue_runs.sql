-- 0078_revenue_runs (issue 26, item 7): the roll-ups the charts of active subscriptions read, and revenue_days (0072)
-- without its trigger. Everything here is written by the deriver's bouncer_revenue_roll_up after the receipt's commit,
-- by explicit statements (a distributed table cannot carry a trigger, issue 27); whoever rebuilds revenue_transactions
-- deletes the project's revenue_days, revenue_runs and revenue_run_days with it and replays the log (0062's backfill
-- rows), which writes all of them again.
DROP TRIGGER revenue_transactions_days ON revenue_transactions;
DROP FUNCTION bouncer_revenue_days_sync();
-- revenue_runs: each purchase's runs of paid service, [starts_at, ends_at): the union of its paid periods (an
-- auto-renewable subscription's transaction, not a trial, with a price and an expiry; each from its purchase date to
-- its expiry or revocation, at most 400 days), periods that overlap or touch joined. next_starts_at, next_ends_at:
-- the purchase's next run (NULL: none). Written by bouncer_revenue_runs_sync.
CREATE TABLE revenue_runs (
    project_id               uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    starts_at                timestamptz NOT NULL,
    ends_at                  timestamptz NOT NULL,
    next_starts_at           timestamptz,
    next_ends_at             timestamptz,
    PRIMARY KEY (project_id, environment, original_transaction_id, starts_at)
);
-- Churn's runs by when they end; the runs begun or ended on the current day (an instant that is not midnight: now).
CREATE INDEX revenue_runs_ends_idx ON revenue_runs (project_id, ends_at) INCLUDE (environment, starts_at,
    next_starts_at, next_ends_at, original_transaction_id);
CREATE INDEX revenue_runs_starts_idx ON revenue_runs (project_id, starts_at) INCLUDE (environment);
-- revenue_run_days: per UTC day and environment, how many runs begin (starts) and end (ends) after the previous
-- midnight and by this one (`day` is the midnight that closes them: a run that begins at 00:00 counts on that day):
-- the purchases active at a midnight are the running sum of starts − ends up to its day. A day back to zero is removed.
CREATE TABLE revenue_run_days (
    project_id   uuid   NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    environment  text   NOT NULL,
    day          date   NOT NULL,
    starts       bigint NOT NULL,
    ends         bigint NOT NULL,
    PRIMARY KEY (project_id, day, environment)
);
-- Backfill through the change log (as 0062): the deriver's roll-up writes the runs of every purchase with a paid
-- subscription period.
INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
SELECT DISTINCT v.project_id, v.environment, v.original_transaction_id, '{"tx": {"revenue": "all"}}'::jsonb, now()
FROM revenue_transactions v
WHERE v.type = 'Auto-Renewable Subscription' AND NOT v.trial AND v.price_milli > 0 AND v.expires_date IS NOT NULL;
