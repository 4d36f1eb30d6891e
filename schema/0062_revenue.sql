-- 0062_revenue: money, computed once (issue 26). Tables only; the rules live in schema/functions/bouncer_money_*.sql
-- and bouncer_revenue_roll_up.sql, the charts' statements in Sources/Storage/PostgresChartStore.swift.
--
-- revenue_settings: a project's money settings. Absent: not in the Small Business Program, reporting in USD.
-- exchange_rates: operator-wide (not a tenant's: every project converts with the same published rates), one row per
--   day × base × currency: how many units of currency one unit of base buys that day (the ECB's "1 EUR = 1.0921
--   USD" is (day, 'EUR', 'USD', 1.0921)). Exact decimals (numeric), never a float.
-- revenue_transactions: each priced transaction's money facts, derived from the change log by the deriver
--   (bouncer_revenue_roll_up, in the transaction that consumes the log rows; never the receipt's), one row per
--   transaction (an upsert of its current facts: a replay changes nothing). revocation_date: when access ended
--   (the stored transaction's: a prorated refund keeps access); refund_date: when Apple refunded
--   refund_milli_percent of it (the signed revocationDate). paid_days_before: whole days of paid service the
--   subscription had accumulated when this transaction began (Apple's one-year rule, bouncer_revenue_roll_up);
--   paid_ms_before and paid_ms (this transaction's own paid service) in milliseconds, ended_max the latest end of
--   paid service up to this transaction: what the roll-up continues from when a later transaction arrives.
CREATE TABLE revenue_settings (
    project_id              uuid    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    small_business_program  boolean NOT NULL DEFAULT false,
    reporting_currency      text    NOT NULL DEFAULT 'USD',
    PRIMARY KEY (project_id)
);
CREATE TABLE exchange_rates (
    day       date    NOT NULL,
    base      text    NOT NULL,
    currency  text    NOT NULL,
    rate      numeric NOT NULL CHECK (rate > 0),
    PRIMARY KEY (currency, day, base)
);
CREATE TABLE revenue_transactions (
    project_id               uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    environment              text        NOT NULL,
    transaction_id           text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    product_id               text        NOT NULL,
    type                     text        NOT NULL,
    storefront               text,
    currency                 text        NOT NULL,
    price_milli              bigint      NOT NULL,
    trial                    boolean     NOT NULL,
    renewal                  boolean     NOT NULL,
    purchase_date            timestamptz NOT NULL,
    expires_date             timestamptz,
    revocation_date          timestamptz,
    refund_date              timestamptz,
    refund_milli_percent     int         NOT NULL,
    paid_days_before         int         NOT NULL,
    paid_ms_before           bigint      NOT NULL,
    paid_ms                  bigint      NOT NULL,
    ended_max                timestamptz,
    PRIMARY KEY (project_id, environment, transaction_id)
);
-- The charts' ranges: sales by purchase date (and the subscriptions active at an instant, bounded by the longest
-- period), refunds by revocation date, a subscription's transactions (its first payment, a trial's conversion).
CREATE INDEX revenue_transactions_purchase_idx ON revenue_transactions (project_id, purchase_date);
CREATE INDEX revenue_transactions_refund_idx ON revenue_transactions (project_id, refund_date)
    WHERE refund_date IS NOT NULL;
CREATE INDEX revenue_transactions_original_idx ON revenue_transactions (project_id, original_transaction_id,
    purchase_date);

-- Backfill through the change log: one row per purchase with a price or a free trial, whose tx asks the deriver to
-- roll up all of the purchase's transactions (bouncer_revenue_roll_up, the one author of the rows; tx carries no
-- overview fields, so the overview counts nothing for it). All in this migration's transaction: the first derive pass
-- takes them together.
INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
SELECT DISTINCT t.project_id, t.environment, t.original_transaction_id, '{"tx": {"revenue": "all"}}'::jsonb, now()
FROM transactions t
WHERE t.price_milli IS NOT NULL OR t.offer_discount_type = 'FREE_TRIAL';
