-- 0018_overview: the overview (GET …/metrics/overview) on a million transactions. Replaces two indexes of 0015.
--
-- Starts and ends by UTC day: keyed by the day the overview groups by, then product and currency, so PostgreSQL
-- groups in index order (no sort or hash of ~270k rows for 90 days) and answers from the index alone. The day is
-- an index expression (`timezone(text, timestamptz)` and the cast to date are immutable), so no table rewrite.
-- The start index also carries `ends_at`: subscriptions active at an instant (the range's start; MRR's instant)
-- that last at most 32 days are found among those started in the 32 days before it (transactions_long_idx has the
-- others), so the wide index by end of 0015 (all rows ending after the instant) goes too.
DROP INDEX transactions_start_idx;
DROP INDEX transactions_end_idx;
CREATE INDEX transactions_start_day_idx ON transactions
    (project_id, ((purchase_date AT TIME ZONE 'UTC')::date), product_id, currency)
    INCLUDE (purchase_date, ends_at, expires_date, type, environment, is_renewal, price_milli);
CREATE INDEX transactions_end_day_idx ON transactions
    (project_id, ((ends_at AT TIME ZONE 'UTC')::date), product_id)
    INCLUDE (ends_at, expires_date, type, environment);

-- Intervals longer than 32 days or without an end (yearly subscriptions, non-consumables): the rest of "active at
-- an instant", by end. Few next to the monthly renewals that make up most of a large table.
CREATE INDEX transactions_long_idx ON transactions (project_id, ends_at)
    INCLUDE (purchase_date, expires_date, type, environment, product_id, price_milli, currency)
    WHERE ends_at IS NULL OR ends_at - purchase_date > interval '32 days';

-- Trial conversions from indexes alone: free trials by expiry carrying what the lookup needs, and each
-- subscription's paid transactions (the lookup was an index scan plus a heap fetch per trial).
DROP INDEX transactions_trial_end_idx;
CREATE INDEX transactions_trial_end_idx ON transactions (project_id, expires_date)
    INCLUDE (environment, original_transaction_id, transaction_id, purchase_date)
    WHERE offer_discount_type = 'FREE_TRIAL';
CREATE INDEX transactions_paid_idx ON transactions (project_id, environment, original_transaction_id)
    INCLUDE (transaction_id, purchase_date)
    WHERE price_milli > 0;
