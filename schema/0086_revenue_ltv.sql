-- 0086_revenue_ltv (issue 26, item 7): the roll-ups realized_ltv reads without a product or country filter, written by
-- the deriver after the receipt's commit, by explicit statements (no trigger, issue 27): bouncer_revenue_ltv_move for
-- the revenue_transactions rows bouncer_revenue_roll_up writes, bouncer_revenue_ltv_rebind for the purchases whose
-- binding moved (the log's rows with `bound` or `revoked`, and `ltv`: this file's backfill). A customer is the user
-- holding a purchase now (its latest binding not revoked, read by bouncer_revenue_ltv_resync: 'u:' || user id), else
-- the purchase itself ('p:' || original transaction id), per environment, as the chart's statement without roll-ups
-- says.
-- Whoever rebuilds revenue_transactions deletes the project's revenue_ltv_purchases, revenue_ltv_customers and
-- revenue_ltv_days with it and replays the log (0062's backfill rows), which writes them again.
-- No foreign key to projects (as 0075, 0085): bouncer_project_purge removes their rows.
--
-- revenue_ltv_purchases: per purchase and currency with a price (revenue_transactions.price_milli > 0), its customer
-- and the customer's cohort (cohort_day: the UTC day of the customer's first payment, revenue_ltv_customers.first_at)
-- and its own first payment in the currency (first_at). Written only when the purchase is synced whole: a renewal or a
-- refund reads it (one probe, for its cohort) and writes nothing here. The chart's count of customers with amounts
-- without a rate reads their days from revenue_transactions, purchase by purchase, for the currencies that lack one.
CREATE TABLE revenue_ltv_purchases (
    project_id               uuid          NOT NULL,
    environment              text          NOT NULL,
    original_transaction_id  text          NOT NULL,
    currency                 text          NOT NULL,
    customer                 text          NOT NULL,
    cohort_day               date          NOT NULL,
    first_at                 timestamptz   NOT NULL,
    PRIMARY KEY (project_id, environment, original_transaction_id, currency)
);
-- A customer's purchases (when one moves to or from them, or their first payment moves).
CREATE INDEX revenue_ltv_purchases_customer_idx ON revenue_ltv_purchases (project_id, environment, customer);
-- The chart's customers with amounts in a currency without a rate: a range of cohorts per currency.
CREATE INDEX revenue_ltv_purchases_cohort_idx ON revenue_ltv_purchases (project_id, currency, cohort_day)
    INCLUDE (environment, customer, original_transaction_id);
-- revenue_ltv_customers: each customer's first payment (the earliest purchase date of a transaction with a price among
-- the purchases they hold); the chart counts a cohort's customers by an index range.
CREATE TABLE revenue_ltv_customers (
    project_id   uuid        NOT NULL,
    environment  text        NOT NULL,
    customer     text        NOT NULL,
    first_at     timestamptz NOT NULL,
    PRIMARY KEY (project_id, environment, customer)
);
CREATE INDEX revenue_ltv_customers_first_idx ON revenue_ltv_customers (project_id, first_at) INCLUDE (environment);
-- revenue_ltv_days: the cohorts' amounts, as revenue_days (0072) keeps the days': per cohort day, environment, UTC day,
-- currency, kind (0: sales by purchase day, 1: refunds by refund day, refund_at their instant; '-infinity' for sales),
-- price, commission tier outside the Small Business Program and refunded milli-percent (0 for sales), how many
-- transactions of the cohort's customers (`n`). Every amount in a row is equal, so each money rule (proceeds, refunded
-- share, conversion at the day's rate rounded once per amount) applies to the row and counts n times. A row back to
-- zero is removed.
CREATE TABLE revenue_ltv_days (
    project_id            uuid        NOT NULL,
    environment           text        NOT NULL,
    cohort_day            date        NOT NULL,
    day                   date        NOT NULL,
    currency              text        NOT NULL,
    kind                  smallint    NOT NULL,
    price_milli           bigint      NOT NULL,
    tier                  int         NOT NULL,
    refund_milli_percent  int         NOT NULL,
    refund_at             timestamptz NOT NULL,
    n                     bigint      NOT NULL,
    PRIMARY KEY (project_id, cohort_day, environment, day, currency, kind, price_milli, tier, refund_milli_percent,
        refund_at)
);
-- Backfill through the change log: a row {"ltv": "all"} per purchase with a price has the deriver's
-- bouncer_revenue_ltv_rebind write it and its customer.
INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
SELECT DISTINCT v.project_id, v.environment, v.original_transaction_id, '{"ltv": "all"}'::jsonb, now()
FROM revenue_transactions v WHERE v.price_milli > 0;
