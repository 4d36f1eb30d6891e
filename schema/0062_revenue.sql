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
--   refund_milli_percent of it (the signed revocationDate). paid_days_before: days of paid service
--   the subscription had accumulated when this transaction began (Apple's one-year rule, bouncer_revenue_roll_up).
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
    PRIMARY KEY (project_id, environment, transaction_id)
);
-- The charts' ranges: sales by purchase date (and the subscriptions active at an instant, bounded by the longest
-- period), refunds by revocation date, a subscription's transactions (its first payment, a trial's conversion).
CREATE INDEX revenue_transactions_purchase_idx ON revenue_transactions (project_id, purchase_date);
CREATE INDEX revenue_transactions_refund_idx ON revenue_transactions (project_id, refund_date)
    WHERE refund_date IS NOT NULL;
CREATE INDEX revenue_transactions_original_idx ON revenue_transactions (project_id, original_transaction_id);

-- Backfill from the transactions as they stand (writers wait; later changes reach the table through their log rows,
-- by the function files this migration commits with). The rows as bouncer_revenue_rows computes them, for every
-- purchase (that file is the live author; this is its text at 0062).
LOCK TABLE transactions IN SHARE MODE;
INSERT INTO revenue_transactions
    WITH base AS (
        SELECT t.*, COALESCE(t.offer_discount_type = 'FREE_TRIAL', false) AS is_trial,
            COALESCE(t.revocation_date, CASE WHEN jsonb_typeof(t.payload -> 'revocationDate') = 'number'
                AND t.revocation_type IS NOT NULL
                THEN to_timestamp((t.payload ->> 'revocationDate')::numeric / 1000) END) AS refunded_at,
            CASE WHEN t.revocation_date IS NULL AND t.revocation_type IS NULL THEN 0
                 WHEN t.revocation_type = 'REFUND_PRORATED'
                 THEN LEAST(GREATEST(COALESCE(t.revocation_percentage, 100000), 0), 100000)::int
                 WHEN t.revocation_type = 'FAMILY_REVOKE' THEN 0
                 ELSE 100000 END AS refunded
        FROM transactions t
        WHERE (t.price_milli IS NOT NULL OR t.offer_discount_type = 'FREE_TRIAL')
          AND t.ownership_type IS DISTINCT FROM 'FAMILY_SHARED'
    ), paid AS (
        SELECT b.*,
            CASE WHEN b.type = 'Auto-Renewable Subscription' AND NOT b.is_trial AND COALESCE(b.price_milli, 0) > 0
                      AND b.expires_date IS NOT NULL AND b.refunded < 100000
                 THEN GREATEST(LEAST(b.expires_date, COALESCE(b.revocation_date, b.expires_date)), b.purchase_date)
            END AS paid_end
        FROM base b
    ), marked AS (
        SELECT p.*,
            CASE WHEN p.paid_end IS NULL THEN 0
                 ELSE extract(epoch FROM p.paid_end - p.purchase_date) / 86400 END AS paid_days,
            max(p.paid_end) OVER w AS ended_before
        FROM paid p
        WINDOW w AS (PARTITION BY p.project_id, p.environment, p.original_transaction_id ORDER BY p.purchase_date, p.transaction_id
                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
    ), islands AS (
        SELECT m.*, sum(CASE WHEN m.paid_end IS NOT NULL
                             AND (m.ended_before IS NULL OR m.purchase_date > m.ended_before + interval '60 days')
                        THEN 1 ELSE 0 END)
                OVER (PARTITION BY m.project_id, m.environment, m.original_transaction_id ORDER BY m.purchase_date, m.transaction_id) AS island
        FROM marked m
    )
    SELECT i.project_id, i.environment, i.transaction_id, i.original_transaction_id, i.product_id, i.type,
        i.payload ->> 'storefront', COALESCE(i.currency, ''), COALESCE(i.price_milli, 0), i.is_trial, i.is_renewal,
        i.purchase_date, i.expires_date, i.revocation_date, CASE WHEN i.refunded > 0 THEN i.refunded_at END,
        i.refunded,
        floor(COALESCE(sum(i.paid_days) OVER (PARTITION BY i.project_id, i.environment, i.original_transaction_id, i.island
            ORDER BY i.purchase_date, i.transaction_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0))::int
    FROM islands i;
