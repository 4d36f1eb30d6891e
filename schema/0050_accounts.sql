-- 0050_accounts: the control plane's first tables (issue 24). An account (a customer of the operator) owns projects;
-- API keys (`bk_…`) act for an account with a role, optionally limited to some of its projects. Neither is a tenant
-- table: both sit above projects, so their keys start with the account, not a project.

CREATE TABLE accounts (
    id          uuid        PRIMARY KEY,
    name        text        NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);

-- Existing projects move into one default account (a fresh database gets it too, so a server with one account keeps
-- creating projects without naming one). Its id is fixed (`Account.defaultId`) so every database agrees on it.
INSERT INTO accounts (id, name, created_at, updated_at)
VALUES ('00000000-0000-4000-8000-000000000001', 'Default', now(), now());

-- RESTRICT: an account with projects cannot be deleted (the API answers 409 first; this is the guarantee).
ALTER TABLE projects ADD COLUMN account_id uuid REFERENCES accounts (id) ON DELETE RESTRICT;
UPDATE projects SET account_id = '00000000-0000-4000-8000-000000000001';
ALTER TABLE projects ALTER COLUMN account_id SET NOT NULL;
-- Read by an account's project list and the 409 of an account's delete.
CREATE INDEX projects_account_idx ON projects (account_id);

-- A key is stored as the SHA-256 of its text only (looked up by that digest, then compared in constant time);
-- `last4` lets a list tell keys apart. `project_ids` NULL: every project of the account. Revoking deletes the row.
-- `last_used_at` is written at most once a minute per key (`PostgresAccountStore.apiKey(hash:at:)`).
CREATE TABLE api_keys (
    account_id    uuid        NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    id            uuid        NOT NULL,
    name          text        NOT NULL,
    role          text        NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer', 'support')),
    project_ids   uuid[]      NULL,
    key_hash      bytea       NOT NULL UNIQUE,
    last4         text        NOT NULL,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NULL,
    last_used_at  timestamptz NULL,
    PRIMARY KEY (account_id, id)
);
