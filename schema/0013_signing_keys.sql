-- 0013_signing_keys: the server's entitlement-token signing keys (P-256, ES256) and the two project settings that
-- turn tokens on. One key is current (retired_at IS NULL; the partial unique index makes a second current key
-- impossible even if two instances generate at once); rotated keys stay, with retired_at, so the JWKS keeps
-- publishing the previous one while tokens it signed are live. The private key is stored only sealed (AES-256-GCM
-- under BOUNCER_ENCRYPTION_KEY, bound to its kid as associated data), like 0007's App Store keys.

CREATE TABLE signing_keys (
    kid                 text        NOT NULL CHECK (kid ~ '^[0-9a-f]{16}$'),
    public_x            text        NOT NULL CHECK (public_x ~ '^[A-Za-z0-9_-]{43}$'),
    public_y            text        NOT NULL CHECK (public_y ~ '^[A-Za-z0-9_-]{43}$'),
    sealed_private_key  bytea       NOT NULL,
    encryption_key_id   text        NOT NULL CHECK (encryption_key_id ~ '^[0-9a-f]{16}$'),
    created_at          timestamptz NOT NULL,
    retired_at          timestamptz,
    PRIMARY KEY (kid)
);
CREATE UNIQUE INDEX signing_keys_one_current ON signing_keys ((retired_at IS NULL)) WHERE retired_at IS NULL;
COMMENT ON COLUMN signing_keys.kid IS
    'first 16 hex digits of SHA-256 of the public key''s DER SubjectPublicKeyInfo (the JWS header''s kid)';
COMMENT ON COLUMN signing_keys.sealed_private_key IS
    'PKCS#8 PEM sealed by AES-256-GCM (associated data bouncer.signing_key:<kid>); never in clear';

ALTER TABLE projects
    ADD COLUMN entitlement_tokens boolean NOT NULL DEFAULT false,
    ADD COLUMN entitlement_token_ttl_seconds integer NOT NULL DEFAULT 300
        CHECK (entitlement_token_ttl_seconds BETWEEN 30 AND 86400);
