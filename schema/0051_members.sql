-- 0051_members: people of an account (issue 24, items 2 and 3). Like api_keys, members sit above the tenants, so their
-- keys start with the account. Secrets: the invite token and the password are stored as digests only (SHA-256 of a
-- 256-bit token; PBKDF2-HMAC-SHA256 of the password with its own salt and iteration count, so the count can grow);
-- the TOTP secret is sealed (AES-256-GCM under BOUNCER_ENCRYPTION_KEY, the key's id beside it), never in clear.

CREATE TABLE members (
    account_id          uuid        NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    id                  uuid        NOT NULL,
    email               text        NOT NULL,
    role                text        NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer', 'support')),
    -- Pending invite: its digest and end; both NULL once accepted (single use).
    invite_hash         bytea       NULL UNIQUE,
    invite_expires_at   timestamptz NULL,
    password_hash       bytea       NULL,
    password_salt       bytea       NULL,
    password_iterations integer     NULL CHECK (password_iterations > 0),
    totp_key_id         text        NULL,
    totp_sealed         bytea       NULL,
    -- The last TOTP step a sign-in used: a code is accepted only for a later step (no replay within its window).
    totp_last_step      bigint      NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    PRIMARY KEY (account_id, id),
    -- Emails are stored normalized (trimmed, lower-cased): unique per account.
    UNIQUE (account_id, email),
    CHECK ((password_hash IS NULL) = (password_salt IS NULL) AND (password_hash IS NULL) = (password_iterations IS NULL)),
    CHECK ((totp_sealed IS NULL) = (totp_key_id IS NULL))
);
-- Sign-in looks a member up by email across accounts.
CREATE INDEX members_email_idx ON members (email);

-- A member's console session acts as the member: the row names them, and goes when they do. Operator sessions keep
-- both NULL. Role and password changes delete the member's sessions in their own transaction.
ALTER TABLE console_sessions
    ADD COLUMN account_id uuid NULL,
    ADD COLUMN member_id  uuid NULL,
    ADD CONSTRAINT console_sessions_member_fk FOREIGN KEY (account_id, member_id)
        REFERENCES members (account_id, id) ON DELETE CASCADE,
    ADD CONSTRAINT console_sessions_member_check CHECK ((account_id IS NULL) = (member_id IS NULL));
CREATE INDEX console_sessions_member_idx ON console_sessions (account_id, member_id) WHERE member_id IS NOT NULL;
