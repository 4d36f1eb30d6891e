-- 0007_app_store_credentials: each project's App Store Server API key (an In-App Purchase key from App Store
-- Connect). The private key is stored only sealed (AES-256-GCM under BOUNCER_ENCRYPTION_KEY, bound to the
-- project's id as associated data); encryption_key_id says which key sealed it, so the key can rotate
-- (BOUNCER_ENCRYPTION_KEY_PREVIOUS opens old rows; `bouncer credentials reencrypt` re-seals them).

CREATE TABLE app_store_credentials (
    project_id          uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    issuer_id           text        NOT NULL CHECK (issuer_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'),
    key_id              text        NOT NULL CHECK (key_id ~ '^[A-Z0-9]{10}$'),
    key_fingerprint     text        NOT NULL CHECK (key_fingerprint ~ '^[0-9a-f]{64}$'),
    sealed_private_key  bytea       NOT NULL,
    encryption_key_id   text        NOT NULL CHECK (encryption_key_id ~ '^[0-9a-f]{16}$'),
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    PRIMARY KEY (project_id)
);
COMMENT ON COLUMN app_store_credentials.sealed_private_key IS
    'the .p8 PEM sealed by AES-256-GCM (nonce, ciphertext, tag; the sealer''s versioned format); never in clear';
COMMENT ON COLUMN app_store_credentials.encryption_key_id IS
    'hex of the first 8 bytes of SHA-256 of the encryption key that sealed sealed_private_key';
COMMENT ON COLUMN app_store_credentials.key_fingerprint IS
    'hex SHA-256 of the key''s DER SubjectPublicKeyInfo: identifies the key, reveals nothing of it';
