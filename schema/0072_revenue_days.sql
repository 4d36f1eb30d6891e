-- 0072_revenue_days: the revenue and refund-rate charts' daily roll-up (issue 26, item 7), kept by a trigger on
-- revenue_transactions (itself derived from the change log by the deriver, never in the receipt's transaction, so
-- neither is this). One row per UTC day, environment, product, storefront ('' when unknown), currency, kind (0: sales
-- by purchase day, 1: refunds by refund day), price, Apple's commission outside the Small Business Program (`tier`:
-- 30, or 15 after a year of paid service) and refunded milli-percent (0 for sales): how many transactions (`n`) and,
-- for sales, how many of them have been refunded (`refunded`). Amounts in a row are all equal, so every money rule
-- (proceeds, refunded share, conversion at the day's rate, each rounded once per amount) applies to the row's price
-- and is counted n times: the charts read a few rows per day instead of every transaction.
CREATE TABLE revenue_days (
    project_id            uuid     NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    day                   date     NOT NULL,
    environment           text     NOT NULL,
    product_id            text     NOT NULL,
    storefront            text     NOT NULL,
    currency              text     NOT NULL,
    kind                  smallint NOT NULL,
    price_milli           bigint   NOT NULL,
    tier                  int      NOT NULL,
    refund_milli_percent  int      NOT NULL,
    n                     bigint   NOT NULL,
    refunded              bigint   NOT NULL,
    PRIMARY KEY (project_id, day, environment, product_id, storefront, currency, kind, price_milli, tier,
        refund_milli_percent)
);
-- The trigger's body is schema/functions/bouncer_revenue_days_sync.sql (this placeholder is replaced in the same run).
CREATE FUNCTION bouncer_revenue_days_sync() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER revenue_transactions_days AFTER INSERT OR UPDATE OR DELETE ON revenue_transactions
    FOR EACH ROW EXECUTE FUNCTION bouncer_revenue_days_sync();
-- Backfill from the rows already derived (the commission rule as bouncer_money_commission states it, outside the
-- Small Business Program).
INSERT INTO revenue_days (project_id, day, environment, product_id, storefront, currency, kind, price_milli, tier,
    refund_milli_percent, n, refunded)
SELECT r.project_id, r.day, r.environment, r.product_id, r.storefront, r.currency, r.kind, r.price_milli, r.tier,
    r.pct, count(*), sum(r.refunded)
FROM (SELECT v.project_id, k.kind, v.environment, v.product_id, COALESCE(v.storefront, '') AS storefront, v.currency,
        v.price_milli,
        CASE WHEN v.type = 'Auto-Renewable Subscription' AND v.paid_days_before >= 365 THEN 15 ELSE 30 END AS tier,
        CASE WHEN k.kind = 0 THEN (v.purchase_date AT TIME ZONE 'UTC')::date
             ELSE (v.refund_date AT TIME ZONE 'UTC')::date END AS day,
        CASE WHEN k.kind = 0 THEN 0 ELSE v.refund_milli_percent END AS pct,
        CASE WHEN k.kind = 0 AND v.refund_milli_percent > 0 THEN 1 ELSE 0 END AS refunded
    FROM revenue_transactions v CROSS JOIN (VALUES (0::smallint), (1::smallint)) k (kind)
    WHERE v.price_milli > 0
      AND (k.kind = 0 OR (v.refund_milli_percent > 0 AND v.refund_date IS NOT NULL))) r
GROUP BY r.project_id, r.day, r.environment, r.product_id, r.storefront, r.currency, r.kind, r.price_milli, r.tier,
    r.pct;
