-- Renewal facts the purchases row could not hold, and renewal info that arrives before its purchase.

-- RenewalFacts.productId, .renewalDate and .environment, so a purchase's renewal info reads back exactly
-- as it was applied (0001 kept only the fields the status rules use).
ALTER TABLE purchases
    ADD COLUMN renewal_product_id text,
    ADD COLUMN renewal_date timestamptz,
    ADD COLUMN renewal_environment text;

-- Signed renewal info (from a notification) for a purchase with no known transaction yet: a purchases row
-- needs its latest transaction, so the facts wait here and the first recorded transaction of the purchase
-- adopts them (and deletes the row) in its own database transaction. One row per purchase: the newest
-- signedDate wins.
CREATE TABLE pending_renewals (
    project_id                uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    original_transaction_id   text        NOT NULL,
    product_id                text,
    auto_renew_product_id     text,
    auto_renew_status         int,
    expiration_intent         int,
    grace_period_expires_date timestamptz,
    is_in_billing_retry       boolean,
    price_increase_status     int,
    offer_type                int,
    offer_identifier          text,
    renewal_date              timestamptz,
    environment               text        NOT NULL,
    signed_date               timestamptz NOT NULL,
    payload                   jsonb       NOT NULL,
    received_at               timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, original_transaction_id)
);
