-- 0035_overview_days: the overview's per-day counts as a rollup derived from the change log (issue 22, item 1:
-- "the dashboard reads rollups, not indexes on the hot table"). First step: the log carries each transaction's
-- overview fields and the deriver maintains the rollup; the overview still reads transactions and purchases (its
-- six indexes stay until it reads this table).
--
-- purchase_changes.data gains one key:
--   tx   the call's transaction, when it was inserted or one of the fields the overview counts changed:
--        {"old": fields before (absent for an insert), "new": fields after} (bouncer_overview_fields)
--
-- overview_days: per UTC day, environment, product and currency, the sums the overview's per-day statements compute
-- from the live tables. Each log row's tx is subtracted as old and added as new (bouncer_overview_roll_up) in the
-- transaction that deletes the row (bouncer_derive_changes, bouncer_webhook_seed), so each change counts exactly once
-- whatever the batches and crashes. A transaction contributes to up to three days: its start (starts, start_subs,
-- new_purchases, renewals, priced, revenue_milli), its end, the earlier of expiry and revocation (ends, end_subs),
-- and its revocation (refunds). starts/ends count non-consumables, *_subs those of them with an expiry, priced the
-- transactions with a price. Apple's currency may be absent: currency '' with currency_null, so the key stays a
-- primary key without confusing an absent currency with an empty one.
CREATE TABLE overview_days (
    project_id     uuid    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    environment    text    NOT NULL,
    day            date    NOT NULL,
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
    refunds        bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, environment, day, product_id, currency, currency_null)
);

-- Backfill from the transactions as they stand. Writers wait (SHARE blocks them; the backfill sees every one that
-- committed before), so each later change reaches the rollup through its log row's tx, written by the function
-- files this migration commits with; log rows pending now carry no tx and add nothing.
LOCK TABLE transactions IN SHARE MODE;
INSERT INTO overview_days (project_id, environment, day, product_id, currency, currency_null, starts, start_subs,
    new_purchases, renewals, priced, revenue_milli, ends, end_subs, refunds)
SELECT t.project_id, t.environment, (k.at AT TIME ZONE 'UTC')::date, t.product_id, COALESCE(t.currency, ''),
    t.currency IS NULL,
    count(*) FILTER (WHERE k.kind = 'start' AND t.type <> 'Consumable'),
    count(*) FILTER (WHERE k.kind = 'start' AND t.type <> 'Consumable' AND t.expires_date IS NOT NULL),
    count(*) FILTER (WHERE k.kind = 'start' AND NOT t.is_renewal),
    count(*) FILTER (WHERE k.kind = 'start' AND t.is_renewal),
    count(*) FILTER (WHERE k.kind = 'start' AND t.price_milli IS NOT NULL),
    COALESCE(sum(t.price_milli) FILTER (WHERE k.kind = 'start'), 0),
    count(*) FILTER (WHERE k.kind = 'end' AND t.type <> 'Consumable'),
    count(*) FILTER (WHERE k.kind = 'end' AND t.type <> 'Consumable' AND t.expires_date IS NOT NULL),
    count(*) FILTER (WHERE k.kind = 'refund')
FROM transactions t
CROSS JOIN LATERAL (VALUES ('start', t.purchase_date), ('end', t.ends_at), ('refund', t.revocation_date)) k (kind, at)
WHERE k.at IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6;

-- bouncer_append_change gains p_tx (the file defines the new signature).
DROP FUNCTION bouncer_append_change(uuid, text, text, purchases, purchases, text[], jsonb, text[], text, text);
