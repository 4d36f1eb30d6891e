-- 0015_console: the admin console's sessions, and what the revenue dashboard's overview query reads fast.

-- A signed-in console: only the SHA-256 of the session token (the cookie's value) is stored, like secret keys.
-- Not a tenant table: the admin token (and so a session) spans every project.
CREATE TABLE console_sessions (
    token_hash   bytea       PRIMARY KEY,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);
CREATE INDEX console_sessions_expires_idx ON console_sessions (expires_at);

-- Price and currency as Apple puts them in a transaction (milli-units of the ISO 4217 currency),
-- kept as columns so the overview sums them without parsing JSON per row (offer_discount_type came in 0009). Computed
-- by the database from the stored payload: a malformed or hostile value becomes NULL, never a failed insert.
ALTER TABLE transactions
    ADD COLUMN price_milli bigint GENERATED ALWAYS AS (
        CASE WHEN jsonb_typeof(payload->'price') = 'number'
                  AND (payload->'price')::numeric BETWEEN -1000000000000000 AND 1000000000000000
             THEN round((payload->'price')::numeric)::bigint END) STORED,
    ADD COLUMN currency text GENERATED ALWAYS AS (
        CASE WHEN jsonb_typeof(payload->'currency') = 'string' AND length(payload->>'currency') <= 8
             THEN payload->>'currency' END) STORED;

-- Whether a transaction renews a subscription (a later transaction of its original), and when it stops entitling
-- (the earlier of expiry and revocation; NULL: never), for the same reason. A column rather than an expression
-- index, because PostgreSQL answers from an index alone only when it holds the columns a statement names.
ALTER TABLE transactions
    ADD COLUMN is_renewal boolean GENERATED ALWAYS AS (transaction_id <> original_transaction_id) STORED,
    ADD COLUMN ends_at timestamptz GENERATED ALWAYS AS (LEAST(expires_date, revocation_date)) STORED;

-- The overview's range scans, each an index-only scan (the INCLUDE columns are every column the statement reads,
-- so the heap, whose rows carry the whole payload, is not read): transactions starting by day (starts, purchases,
-- renewals, revenue), transactions ending by day (the earlier of expiry and revocation: active counts, MRR),
-- refunds by day, free trials ending by day, purchases' latest expiry (expirations).
CREATE INDEX transactions_start_idx ON transactions (project_id, purchase_date)
    INCLUDE (expires_date, type, environment, product_id, is_renewal, price_milli, currency);
CREATE INDEX transactions_end_idx ON transactions (project_id, ends_at)
    INCLUDE (purchase_date, expires_date, type, environment, product_id, price_milli, currency);
CREATE INDEX transactions_revocation_idx ON transactions (project_id, revocation_date) INCLUDE (environment)
    WHERE revocation_date IS NOT NULL;
CREATE INDEX transactions_trial_end_idx ON transactions (project_id, expires_date)
    WHERE offer_discount_type = 'FREE_TRIAL';
CREATE INDEX purchases_expires_idx ON purchases (project_id, expires_date) INCLUDE (revocation_date, environment);
