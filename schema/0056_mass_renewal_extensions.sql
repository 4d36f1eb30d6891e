-- 0056_mass_renewal_extensions: Apple's Extend Subscription Renewal Dates for All Active Subscribers (issue 25),
-- recorded like single extensions (renewal_extensions): the row is written before Apple is asked, completed with
-- Apple's acceptance or error, and refreshed by each status check (Get Status of Subscription Renewal Date
-- Extensions) until Apple reports it complete with its counts. Per project and Apple's request identifier (ours).
CREATE TABLE mass_renewal_extensions (
    project_id          uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    request_identifier  uuid        NOT NULL,
    environment         text        NOT NULL,
    product_id          text        NOT NULL,
    extend_by_days      int         NOT NULL CHECK (extend_by_days BETWEEN 1 AND 90),
    reason_code         int         NOT NULL CHECK (reason_code BETWEEN 0 AND 3),
    storefronts         text[]      NULL,
    accepted            boolean     NULL,
    apple_error_code    int         NULL,
    error               text        NULL,
    complete            boolean     NOT NULL DEFAULT false,
    complete_date       timestamptz NULL,
    succeeded_count     bigint      NULL,
    failed_count        bigint      NULL,
    created_at          timestamptz NOT NULL,
    checked_at          timestamptz NULL,
    PRIMARY KEY (project_id, request_identifier)
);
CREATE INDEX mass_renewal_extensions_product_idx ON mass_renewal_extensions (project_id, product_id, created_at);
