-- 0009_app_transactions: AppTransaction (proof that an Apple account bought or installed the app), the project
-- setting that turns old app purchases into entitlements, consent withdrawals (RESCIND_CONSENT), and the 2025
-- transaction and renewal fields, read from the stored signed payloads (the record functions of 0006 are unchanged).

-- One row per app download, per project and environment (Xcode and LocalTesting ids, which anyone can sign, never
-- meet a real one). user_id: the user last posted with it (POST /v1/app-transactions), NULL when only a notification
-- named it. consent_rescinded_at: when a parent or guardian withdrew consent (the notification's signedDate).
CREATE TABLE app_transactions (
    project_id                   uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    environment                  text        NOT NULL,
    app_transaction_id           text        NOT NULL,
    bundle_id                    text        NOT NULL,
    original_application_version text,
    original_purchase_date       timestamptz,
    receipt_creation_date        timestamptz NOT NULL,
    user_id                      text,
    consent_rescinded_at         timestamptz,
    payload                      jsonb       NOT NULL,
    first_seen_at                timestamptz NOT NULL,
    last_seen_at                 timestamptz NOT NULL,
    PRIMARY KEY (project_id, environment, app_transaction_id)
);
-- GET /v1/subscriptions reads a user's app transactions in the same statement as their purchases.
CREATE INDEX app_transactions_user ON app_transactions (project_id, user_id) WHERE user_id IS NOT NULL;

-- {"purchased_before_version": "2.0", "entitlements": ["pro"]} or NULL (validated by ProjectRules/AppPurchaseRules).
ALTER TABLE projects ADD COLUMN app_purchase_entitlements jsonb;

-- The 2025 transaction fields, for SQL (reports, support queries): generated from the stored payload, so the
-- writers (bouncer_record_transaction) need no new parameters. Swift decodes the same fields from the payload.
ALTER TABLE transactions
    ADD COLUMN app_transaction_id text GENERATED ALWAYS AS (payload ->> 'appTransactionId') STORED,
    ADD COLUMN offer_period text GENERATED ALWAYS AS (payload ->> 'offerPeriod') STORED,
    ADD COLUMN offer_discount_type text GENERATED ALWAYS AS (payload ->> 'offerDiscountType') STORED,
    ADD COLUMN revocation_type text GENERATED ALWAYS AS (payload ->> 'revocationType') STORED,
    ADD COLUMN revocation_percentage bigint GENERATED ALWAYS AS (
        CASE WHEN jsonb_typeof(payload -> 'revocationPercentage') = 'number'
                  AND (payload ->> 'revocationPercentage') ~ '^[0-9]{1,12}$'
             THEN (payload ->> 'revocationPercentage')::bigint END) STORED,
    ADD COLUMN advanced_commerce_info jsonb GENERATED ALWAYS AS (payload -> 'advancedCommerceInfo') STORED;
