-- 0001_init: the initial schema.
-- Every tenant table's primary key starts with project_id and every foreign key includes it, so the
-- tables can later be distributed by tenant (Citus: create_distributed_table(..., 'project_id')).

CREATE TABLE projects (
    id                            uuid        PRIMARY KEY,
    name                          text        NOT NULL,
    bundle_id                     text        NOT NULL,
    app_apple_id                  bigint      NULL,
    environments                  text[]      NOT NULL DEFAULT '{Production,Sandbox}',
    transfer_policy               text        NOT NULL DEFAULT 'transfer'
                                              CHECK (transfer_policy IN ('transfer', 'share', 'block')),
    allow_xcode                   boolean     NOT NULL DEFAULT false,
    require_secret_key_for_reads  boolean     NOT NULL DEFAULT false,
    public_key                    text        NOT NULL UNIQUE,
    secret_key_hash               bytea       NOT NULL,
    settings                      jsonb       NOT NULL DEFAULT '{}',
    created_at                    timestamptz NOT NULL DEFAULT now(),
    updated_at                    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON COLUMN projects.secret_key_hash IS 'hash of the secret API key; the key itself is never stored';

CREATE TABLE products (
    project_id    uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    product_id    text        NOT NULL,
    entitlements  text[]      NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, product_id)
);

-- One row per verified App Store transaction (every renewal is its own transaction_id).
CREATE TABLE transactions (
    project_id               uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    transaction_id           text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    product_id               text        NOT NULL,
    type                     text        NOT NULL,
    environment              text        NOT NULL,
    purchase_date            timestamptz NOT NULL,
    original_purchase_date   timestamptz,
    expires_date             timestamptz,
    revocation_date          timestamptz,
    revocation_reason        int,
    app_account_token        uuid,
    ownership_type           text,
    signed_date              timestamptz NOT NULL,
    payload                  jsonb       NOT NULL,
    first_seen_at            timestamptz NOT NULL DEFAULT now(),
    last_seen_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, transaction_id)
);
CREATE INDEX transactions_original_idx ON transactions (project_id, original_transaction_id);

-- Per original transaction state (latest transaction + renewal info), kept whether or not a user is
-- bound yet, so facts arriving before a user is known (notifications, other devices) are not lost.
CREATE TABLE purchases (
    project_id                 uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    original_transaction_id    text        NOT NULL,
    latest_transaction_id      text        NOT NULL,
    product_id                 text        NOT NULL,
    type                       text        NOT NULL,
    environment                text        NOT NULL,
    purchase_date              timestamptz,
    expires_date               timestamptz,
    revocation_date            timestamptz,
    revocation_reason          int,
    ownership_type             text,
    latest_signed_date         timestamptz NOT NULL,
    auto_renew_status          int         NULL,
    auto_renew_product_id      text,
    expiration_intent          int,
    grace_period_expires_date  timestamptz,
    is_in_billing_retry        boolean,
    price_increase_status      int,
    offer_type                 int,
    offer_identifier           text,
    renewal_signed_date        timestamptz,
    renewal_payload            jsonb,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    updated_at                 timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, original_transaction_id)
);

-- Which user holds which purchase (the API's subscriptions, keyed by user).
CREATE TABLE subscriptions (
    project_id               uuid        NOT NULL,
    user_id                  text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    device_id                text        NULL,
    bound_at                 timestamptz NOT NULL DEFAULT now(),
    revoked_at               timestamptz NULL,
    updated_at               timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, user_id, original_transaction_id),
    FOREIGN KEY (project_id, original_transaction_id)
        REFERENCES purchases (project_id, original_transaction_id) ON DELETE CASCADE
);
COMMENT ON COLUMN subscriptions.revoked_at IS 'set when ownership moved to another user under the transfer policy';
CREATE INDEX subscriptions_original_idx ON subscriptions (project_id, original_transaction_id);

-- Audit trail of ownership moves between users (transfer/share/block decisions).
CREATE TABLE ownership_events (
    project_id               uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    id                       bigserial   NOT NULL,
    original_transaction_id  text        NOT NULL,
    from_user_id             text,
    to_user_id               text,
    policy                   text        NOT NULL,
    at                       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, id)
);
CREATE INDEX ownership_events_original_idx ON ownership_events (project_id, original_transaction_id);

-- App Store Server Notifications V2, deduplicated by notification_uuid.
CREATE TABLE notifications (
    project_id               uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    notification_uuid        uuid        NOT NULL,
    notification_type        text        NOT NULL,
    subtype                  text,
    original_transaction_id  text,
    environment              text,
    signed_date              timestamptz,
    payload                  jsonb       NOT NULL,
    received_at              timestamptz NOT NULL DEFAULT now(),
    processed_at             timestamptz,
    PRIMARY KEY (project_id, notification_uuid)
);
CREATE INDEX notifications_original_idx ON notifications (project_id, original_transaction_id);
