-- 0054_usage: usage per account and UTC month, and each account's quotas (issue 24). Above the tenants like 0050's
-- tables: keys start with the account. Counted in memory by each process (`UsageMeter`) and added here by its flush,
-- one statement for every account-month (`count = count + delta`): the receipt's transaction never writes here.
-- Tracked revenue is not a counter: it is read from the overview's rollups (overview_days).
CREATE TABLE account_usage (
    account_id          uuid   NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    month               date   NOT NULL CHECK (extract(day FROM month) = 1),
    receipts            bigint NOT NULL DEFAULT 0,
    notifications       bigint NOT NULL DEFAULT 0,
    app_store_calls     bigint NOT NULL DEFAULT 0,
    webhooks_delivered  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, month)
);

-- NULL: unlimited. A row exists only while one of the two is set.
CREATE TABLE account_quotas (
    account_id           uuid        PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    receipts_per_month   bigint      NULL CHECK (receipts_per_month >= 0),
    requests_per_second  bigint      NULL CHECK (requests_per_second >= 1),
    updated_at           timestamptz NOT NULL
);
