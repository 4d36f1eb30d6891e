-- 0005_key_rotation: keys rotate with a grace period; purchases can bind to the user Apple's appAccountToken names.
-- A project has one current key per kind (expires_at IS NULL) and possibly a few retiring ones that work until
-- expires_at. Public-key authentication is one lookup through project_keys_public_key_key.

CREATE TABLE project_keys (
    project_id       uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    id               uuid        NOT NULL,
    kind             text        NOT NULL CHECK (kind IN ('public', 'secret')),
    public_key       text        NULL UNIQUE,
    secret_key_hash  bytea       NULL,
    last4            text        NULL,
    created_at       timestamptz NOT NULL,
    expires_at       timestamptz NULL,
    PRIMARY KEY (project_id, id),
    CHECK ((kind = 'public' AND public_key IS NOT NULL AND secret_key_hash IS NULL)
        OR (kind = 'secret' AND secret_key_hash IS NOT NULL AND public_key IS NULL))
);
COMMENT ON COLUMN project_keys.secret_key_hash IS 'SHA-256 of the secret API key; the key itself is never stored';
COMMENT ON COLUMN project_keys.expires_at IS 'NULL for the current key; a retiring key works until this instant';

-- Today's keys become each project's current keys (the secret's last four characters are unknown: only its hash
-- was kept).
INSERT INTO project_keys (project_id, id, kind, public_key, created_at)
    SELECT id, gen_random_uuid(), 'public', public_key, updated_at FROM projects;
INSERT INTO project_keys (project_id, id, kind, secret_key_hash, created_at)
    SELECT id, gen_random_uuid(), 'secret', secret_key_hash, updated_at FROM projects;

ALTER TABLE projects DROP COLUMN public_key, DROP COLUMN secret_key_hash;

ALTER TABLE projects ADD COLUMN app_account_token_policy text NOT NULL DEFAULT 'ignore'
    CHECK (app_account_token_policy IN ('ignore', 'require_match', 'prefer'));
