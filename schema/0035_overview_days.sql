-- 0035_overview_days: the overview (GET …/metrics/overview) reads rollups derived from the change log instead of
-- six indexes on the receipt's hot tables (issue 22: "the dashboard reads rollups, not indexes on the hot table";
-- 0036 drops the indexes).
--
-- purchase_changes.data gains one key, written by bouncer_record_transaction when the call changed what the
-- overview counts:
--   tx   {"old", "new"}: the call's transaction's overview fields (bouncer_overview_fields) before (absent: it was
--        not stored) and after, when they differ; {"p_old", "p_new"}: its purchase's (bouncer_overview_purchase_fields:
--        product and expiry while not revoked) when they differ.
--
-- Each field set is a handful of events at instants (bouncer_overview_events): a transaction's start (its purchase
-- date), its end (the earlier of expiry and revocation), its stop (the end, or the start when it ends before it:
-- the instant it stops being active), its refund (revocation); a purchase's expiry. The deriver adds a consumed log
-- row's events, old ones subtracted and new ones added (bouncer_overview_roll_up), in the transaction that deletes
-- the row (bouncer_derive_changes, bouncer_webhook_seed), so each change counts exactly once whatever the batches
-- and crashes; the overview adds the rows still pending in its own snapshot, so it reads its writes.
--
-- overview_days: the events' sums per UTC day, and whether at midnight exactly (so a bound at midnight, the range's
-- start or end, is exact: "ended by the range's start" includes an end at 00:00, "started before it" does not),
-- environment, product and currency ('' with currency_null for an absent one, so the key stays a primary key).
--   starts, start_subs        non-consumables started (subs: with an expiry)
--   new_purchases, renewals   transactions started: first of their purchase, later ones
--   priced, revenue_milli     started with a price, and its sum
--   ends, end_subs            non-consumables ended
--   stops, stop_subs          non-consumables stopped being active (active at an instant = started before it minus
--                             stopped by it: running sums from the first day)
--   refunds                   transactions revoked
--   expirations               purchases (their latest transaction) expiring, not revoked
--   mrr_n, mrr_milli          subscriptions with a price and currency: +1 and +price per 30 days at the start, −1
--                             and − the same at the stop (MRR at an instant: the sum up to it)
-- overview_instants: the same events at their exact instant (the ends, expirations and MRR columns), kept only
--   from yesterday's midnight (UTC, the deriver's clock) on: what "up to now" needs within the current day. Older
--   rows are pruned by the deriver; an overview asked about an older "now" reads that day from the tables.
-- overview_trials: free-trial transactions (n: net count, 1 when stored), by expiry; a conversion is a paid later
--   transaction of the same purchase, read through transactions_original_idx (the customer timeline's index).
CREATE TABLE overview_days (
    project_id     uuid    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    environment    text    NOT NULL,
    day            date    NOT NULL,
    midnight       boolean NOT NULL,
    product_id     text    NOT NULL,
    currency       text    NOT NULL,
    currency_null  boolean NOT NULL,
    starts         bigint  NOT NULL DEFAULT 0,
    start_subs     bigint  NOT NULL DEFAULT 0,
    new_purchases  bigint  NOT NULL DEFAULT 0,
    renewals       bigint  NOT NULL DEFAULT 0,
    priced         bigint  NOT NULL DEFAULT 0,
    revenue_milli  numeric NOT NULL DEFAULT 0,
    ends           bigint  NOT NULL DEFAULT 0,
    end_subs       bigint  NOT NULL DEFAULT 0,
    stops          bigint  NOT NULL DEFAULT 0,
    stop_subs      bigint  NOT NULL DEFAULT 0,
    refunds        bigint  NOT NULL DEFAULT 0,
    expirations    bigint  NOT NULL DEFAULT 0,
    mrr_n          bigint  NOT NULL DEFAULT 0,
    mrr_milli      numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, day, midnight, environment, product_id, currency, currency_null)
);
CREATE TABLE overview_instants (
    project_id     uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    at             timestamptz NOT NULL,
    environment    text        NOT NULL,
    product_id     text        NOT NULL,
    currency       text        NOT NULL,
    currency_null  boolean     NOT NULL,
    ends           bigint      NOT NULL DEFAULT 0,
    end_subs       bigint      NOT NULL DEFAULT 0,
    expirations    bigint      NOT NULL DEFAULT 0,
    mrr_n          bigint      NOT NULL DEFAULT 0,
    mrr_milli      numeric     NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, at, environment, product_id, currency, currency_null)
);
CREATE TABLE overview_trials (
    project_id               uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    expires_date             timestamptz NOT NULL,
    environment              text        NOT NULL,
    transaction_id           text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    purchase_date            timestamptz NOT NULL,
    n                        bigint      NOT NULL,
    PRIMARY KEY (project_id, expires_date, environment, transaction_id, original_transaction_id, purchase_date)
);

-- Backfill from the tables as they stand. Writers wait (SHARE blocks them; the backfill sees every one that committed
-- before), so each later change reaches the rollups through its log row's tx, written by the function files this
-- migration commits with; log rows pending now carry no tx and add nothing. The events as
-- bouncer_overview_events computes them (that file is the live author; this is its text at 0035).
LOCK TABLE transactions, purchases IN SHARE MODE;
CREATE TEMPORARY TABLE overview_backfill ON COMMIT DROP AS
SELECT t.project_id, t.environment, k.at, t.product_id, t.currency,
    CASE WHEN k.kind = 'start' AND t.type <> 'Consumable' THEN 1 ELSE 0 END AS starts,
    CASE WHEN k.kind = 'start' AND t.type <> 'Consumable' AND t.expires_date IS NOT NULL THEN 1 ELSE 0 END AS start_subs,
    CASE WHEN k.kind = 'start' AND NOT t.is_renewal THEN 1 ELSE 0 END AS new_purchases,
    CASE WHEN k.kind = 'start' AND t.is_renewal THEN 1 ELSE 0 END AS renewals,
    CASE WHEN k.kind = 'start' AND t.price_milli IS NOT NULL THEN 1 ELSE 0 END AS priced,
    CASE WHEN k.kind = 'start' THEN COALESCE(t.price_milli, 0) ELSE 0 END::numeric AS revenue_milli,
    CASE WHEN k.kind = 'end' AND t.type <> 'Consumable' THEN 1 ELSE 0 END AS ends,
    CASE WHEN k.kind = 'end' AND t.type <> 'Consumable' AND t.expires_date IS NOT NULL THEN 1 ELSE 0 END AS end_subs,
    CASE WHEN k.kind = 'stop' AND t.type <> 'Consumable' THEN 1 ELSE 0 END AS stops,
    CASE WHEN k.kind = 'stop' AND t.type <> 'Consumable' AND t.expires_date IS NOT NULL THEN 1 ELSE 0 END AS stop_subs,
    CASE WHEN k.kind = 'refund' THEN 1 ELSE 0 END AS refunds,
    0 AS expirations,
    CASE WHEN m.c IS NULL THEN 0 WHEN k.kind = 'start' THEN 1 WHEN k.kind = 'stop' THEN -1 ELSE 0 END AS mrr_n,
    CASE WHEN m.c IS NULL THEN 0 WHEN k.kind = 'start' THEN m.c WHEN k.kind = 'stop' THEN -m.c ELSE 0 END AS mrr_milli
FROM transactions t
CROSS JOIN LATERAL (SELECT CASE WHEN t.expires_date IS NOT NULL AND t.currency IS NOT NULL AND t.price_milli IS NOT NULL
    THEN t.price_milli::numeric * 2592000 / GREATEST(extract(epoch FROM t.expires_date - t.purchase_date), 86400)
    END AS c) m
CROSS JOIN LATERAL (VALUES ('start', t.purchase_date), ('end', t.ends_at),
    ('stop', CASE WHEN t.ends_at IS NOT NULL THEN GREATEST(t.ends_at, t.purchase_date) END),
    ('refund', t.revocation_date)) k (kind, at)
WHERE k.at IS NOT NULL
UNION ALL
SELECT p.project_id, p.environment, p.expires_date, p.product_id, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0
FROM purchases p
WHERE p.expires_date IS NOT NULL AND p.revocation_date IS NULL;

INSERT INTO overview_days (project_id, day, midnight, environment, product_id, currency, currency_null, starts,
    start_subs, new_purchases, renewals, priced, revenue_milli, ends, end_subs, stops, stop_subs, refunds, expirations,
    mrr_n, mrr_milli)
SELECT project_id, (at AT TIME ZONE 'UTC')::date, (at AT TIME ZONE 'UTC')::time = time '00:00', environment,
    product_id, COALESCE(currency, ''), currency IS NULL, sum(starts), sum(start_subs), sum(new_purchases),
    sum(renewals), sum(priced), sum(revenue_milli), sum(ends), sum(end_subs), sum(stops), sum(stop_subs),
    sum(refunds), sum(expirations), sum(mrr_n), sum(mrr_milli)
FROM overview_backfill
GROUP BY 1, 2, 3, 4, 5, 6, 7;

INSERT INTO overview_instants (project_id, at, environment, product_id, currency, currency_null, ends, end_subs,
    expirations, mrr_n, mrr_milli)
SELECT project_id, at, environment, product_id, COALESCE(currency, ''), currency IS NULL, sum(ends), sum(end_subs),
    sum(expirations), sum(mrr_n), sum(mrr_milli)
FROM overview_backfill
WHERE at >= (date_trunc('day', now() AT TIME ZONE 'UTC') - interval '1 day') AT TIME ZONE 'UTC'
  AND (ends, end_subs, expirations, mrr_n, mrr_milli) <> (0, 0, 0, 0, 0)
GROUP BY 1, 2, 3, 4, 5, 6;

INSERT INTO overview_trials (project_id, expires_date, environment, transaction_id, original_transaction_id,
    purchase_date, n)
SELECT t.project_id, t.expires_date, t.environment, t.transaction_id, t.original_transaction_id, t.purchase_date, 1
FROM transactions t
WHERE t.offer_discount_type = 'FREE_TRIAL' AND t.expires_date IS NOT NULL;

-- bouncer_append_change gains p_tx (the file defines the new signature).
DROP FUNCTION bouncer_append_change(uuid, text, text, purchases, purchases, text[], jsonb, text[], text, text);
