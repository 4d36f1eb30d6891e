-- 0085_revenue_values (issue 26, item 7): the roll-ups the mrr, mrr_movement and subscription_retention charts read without a product or
-- country filter, written by the deriver's bouncer_revenue_roll_up after the receipt's commit, by explicit statements
-- (bouncer_revenue_values_sync; no trigger, issue 27), and subscription_retention's (revenue_cohorts). Whoever
-- rebuilds revenue_transactions deletes the project's revenue_values, revenue_value_days and revenue_cohorts with it and replays the log (0062's backfill rows), which writes them again.
-- No foreign key to projects (as 0075, 0076): bouncer_project_purge removes their rows.
--
-- revenue_values: each purchase's MRR share as a function of time, [starts_at, ends_at): the monthly price
-- (bouncer_money_monthly) and currency of its latest paid period active at each instant (the greatest purchase date,
-- then transaction id, among the periods that cover it, as the charts' `paid` predicate and their 400-day bound
-- say), contiguous spans of one value joined. paid_since: the purchase's first paid transaction (not a trial, with a
-- price), which tells a reactivation from a new subscription.
CREATE TABLE revenue_values (
    project_id               uuid        NOT NULL,
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    starts_at                timestamptz NOT NULL,
    ends_at                  timestamptz NOT NULL,
    currency                 text        NOT NULL,
    monthly_milli            bigint      NOT NULL,
    paid_since               timestamptz NOT NULL,
    PRIMARY KEY (project_id, environment, original_transaction_id, starts_at)
);
-- mrr_movement's changes of a range (spans begun or ended in it) and mrr's current instant (since its midnight):
-- index-only, the columns the charts read included.
CREATE INDEX revenue_values_starts_idx ON revenue_values (project_id, starts_at)
    INCLUDE (environment, original_transaction_id, ends_at, currency, monthly_milli, paid_since);
CREATE INDEX revenue_values_ends_idx ON revenue_values (project_id, ends_at)
    INCLUDE (environment, original_transaction_id, starts_at, currency, monthly_milli, paid_since);
-- revenue_value_days: per UTC day, environment, currency and monthly price, how many spans of that value begin minus
-- how many end after the previous midnight and by this one (`day` is the midnight that closes them, as
-- revenue_run_days): the purchases holding a value at a midnight are the running sum up to its day. A day back to
-- zero is removed.
CREATE TABLE revenue_value_days (
    project_id     uuid   NOT NULL,
    environment    text   NOT NULL,
    day            date   NOT NULL,
    currency       text   NOT NULL,
    monthly_milli  bigint NOT NULL,
    n              bigint NOT NULL,
    PRIMARY KEY (project_id, day, environment, currency, monthly_milli)
);
-- revenue_cohorts: subscription_retention's members, one row per purchase with a paid subscription period: first_at,
-- the purchase date of its first one (by purchase date, then transaction id), and months, bit k (0…12) set when its
-- paid service (its revenue_values spans) overlaps month k after it ([first + k months, first + k + 1 months), UTC
-- calendar months). Written by bouncer_revenue_cohort_sync when a change reaches the first 13 months.
CREATE TABLE revenue_cohorts (
    project_id               uuid        NOT NULL,
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    first_at                 timestamptz NOT NULL,
    months                   int         NOT NULL,
    PRIMARY KEY (project_id, environment, original_transaction_id)
) WITH (fillfactor = 80);
-- A cohort is a range of first payments. months is in no index, so a renewal that adds a month updates its row in
-- place (a heap-only update, room left in each page by the fillfactor).
CREATE INDEX revenue_cohorts_first_idx ON revenue_cohorts (project_id, first_at) INCLUDE (environment);
-- The sync's earlier periods that a full refund left out of revenue_transactions.ended_max (the others it finds by
-- walking back until that running end falls before the change); partial: only fully refunded rows have an entry.
CREATE INDEX revenue_transactions_full_refund_idx ON revenue_transactions (project_id, original_transaction_id,
    environment, purchase_date) WHERE refund_milli_percent >= 100000;
-- Backfill through the change log (as 0062, 0078): the deriver's roll-up writes the spans of every purchase with a
-- paid subscription period.
INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
SELECT DISTINCT v.project_id, v.environment, v.original_transaction_id, '{"tx": {"revenue": "all"}}'::jsonb, now()
FROM revenue_transactions v
WHERE v.type = 'Auto-Renewable Subscription' AND NOT v.trial AND v.price_milli > 0 AND v.expires_date IS NOT NULL;
