-- 0057_retention: Retention Messaging hosted by Bouncer (issue 25). A project's rules (an ordered list, first match
-- wins, replaced as a whole by PUT) and every real decision its Get Retention Message endpoint made. A decision's key
-- is Apple's requestIdentifier: a second request with the same identifier finds the row and is refused as a replay.
-- The decisions are facts about what Bouncer answered, never about the purchase: the receipt's path reads neither table.
-- One row per rule, in the order they are tried (position 0 first). A condition left NULL does not constrain.
CREATE TABLE retention_rules (
    project_id            uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    position              int         NOT NULL CHECK (position >= 0),
    name                  text        NOT NULL,
    product_ids           text[]      NULL,
    locale_prefixes       text[]      NULL,
    min_tenure_days       int         NULL,
    max_tenure_days       int         NULL,
    min_renewals          int         NULL,
    max_renewals          int         NULL,
    refunded              boolean     NULL,
    in_billing_retry      boolean     NULL,
    max_offers_used       int         NULL,
    message_id            uuid        NOT NULL,
    alternate_product_id  text        NULL,
    promotional_offer_id  text        NULL,
    CHECK (alternate_product_id IS NULL OR promotional_offer_id IS NULL),
    updated_at            timestamptz NOT NULL,
    PRIMARY KEY (project_id, position)
);

CREATE TABLE retention_decisions (
    project_id               uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    request_identifier       uuid        NOT NULL,
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    product_id               text        NOT NULL,
    locale                   text        NOT NULL,
    signed_date              timestamptz NOT NULL,
    rule_index               int         NULL,
    rule_name                text        NULL,
    action                   text        NOT NULL
        CHECK (action IN ('message', 'alternate_product', 'promotional_offer', 'default')),
    message_id               uuid        NULL,
    alternate_product_id     text        NULL,
    promotional_offer_id     text        NULL,
    reason                   text        NOT NULL,
    decided_at               timestamptz NOT NULL,
    PRIMARY KEY (project_id, request_identifier)
);
-- The customer's timeline reads a purchase's decisions.
CREATE INDEX retention_decisions_purchase_idx
    ON retention_decisions (project_id, environment, original_transaction_id, decided_at);
