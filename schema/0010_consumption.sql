-- 0010_consumption: refund defense (answering CONSUMPTION_REQUEST with Send Consumption Information) and the
-- operator helpers' record of Extend a Subscription Renewal Date.
--
-- The queue row is written by a trigger on `notifications`, so it commits in the same database transaction as the
-- notification (whichever path stored it: the webhook or a catch-up), and the record functions stay untouched. A
-- crash between Apple's delivery and our answer therefore loses nothing: the row waits for the responder.

ALTER TABLE projects
    ADD COLUMN consumption_response text NOT NULL DEFAULT 'off'
        CHECK (consumption_response IN ('off', 'auto')),
    ADD COLUMN consumption_customer_consented boolean NOT NULL DEFAULT false,
    ADD COLUMN consumption_sample_content_provided boolean NOT NULL DEFAULT false,
    ADD COLUMN consumption_refund_preference text NULL
        CHECK (consumption_refund_preference IN ('DECLINE', 'GRANT_FULL', 'GRANT_PRORATED'));
COMMENT ON COLUMN projects.consumption_customer_consented IS
    'the operator declares that the app collects the customer''s consent to share consumption data; '
    'Apple refuses customerConsented other than true, so nothing is sent while this is false';

-- One row per CONSUMPTION_REQUEST (Production or Sandbox: Xcode has no server to answer). The project's settings
-- are read when the row is answered, not when it is queued.
CREATE TABLE consumption_requests (
    project_id               uuid        NOT NULL,
    environment              text        NOT NULL,
    notification_uuid        uuid        NOT NULL,
    -- From the notification's verified signedTransactionInfo (NULL when it carried none: answered 'failed').
    transaction_id           text        NULL,
    original_transaction_id  text        NULL,
    requested_at             timestamptz NOT NULL,
    deadline                 timestamptz NOT NULL,
    status                   text        NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'sent', 'skipped_off', 'skipped_no_consent', 'rejected', 'expired', 'failed')),
    attempts                 int         NOT NULL DEFAULT 0,
    next_attempt_at          timestamptz NOT NULL,
    lease_until              timestamptz NULL,
    lease_token              uuid        NULL,
    last_error               text        NULL,
    apple_error_code         int         NULL,
    request_body             jsonb       NULL,
    sent_at                  timestamptz NULL,
    updated_at               timestamptz NOT NULL,
    PRIMARY KEY (project_id, environment, notification_uuid),
    FOREIGN KEY (project_id, environment, notification_uuid)
        REFERENCES notifications (project_id, environment, notification_uuid) ON DELETE CASCADE
);
CREATE INDEX consumption_requests_due_idx ON consumption_requests (next_attempt_at) WHERE status = 'pending';

-- The nested JWS was verified (chain, signature, bundle, environment) before the notification row was written, so
-- its payload is read here without checking again; a payload that does not decode queues the row without a
-- transaction id (answered 'failed'), and never refuses the notification.
CREATE FUNCTION bouncer_queue_consumption_request() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_part text;
    v_transaction jsonb;
    v_requested timestamptz := COALESCE(NEW.signed_date, NEW.received_at);
BEGIN
    IF NEW.environment NOT IN ('Production', 'Sandbox') THEN
        RETURN NULL;
    END IF;
    BEGIN
        v_part := translate(split_part(NEW.payload #>> '{data,signedTransactionInfo}', '.', 2), '-_', '+/');
        v_part := v_part || repeat('=', (4 - length(v_part) % 4) % 4);
        v_transaction := convert_from(decode(v_part, 'base64'), 'UTF8')::jsonb;
    EXCEPTION WHEN OTHERS THEN
        v_transaction := NULL;
    END;
    INSERT INTO consumption_requests (project_id, environment, notification_uuid, transaction_id,
        original_transaction_id, requested_at, deadline, next_attempt_at, updated_at)
    VALUES (NEW.project_id, NEW.environment, NEW.notification_uuid, v_transaction ->> 'transactionId',
        COALESCE(v_transaction ->> 'originalTransactionId', NEW.original_transaction_id), v_requested,
        v_requested + interval '12 hours', NEW.received_at, NEW.received_at)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;

CREATE TRIGGER notifications_queue_consumption_request
    AFTER INSERT ON notifications
    FOR EACH ROW WHEN (NEW.notification_type = 'CONSUMPTION_REQUEST')
    EXECUTE FUNCTION bouncer_queue_consumption_request();

-- Every call of Extend a Subscription Renewal Date: written before the call (success NULL), completed after, so a
-- crash mid-call still leaves the request identifier Apple deduplicates by.
CREATE TABLE renewal_extensions (
    project_id               uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    request_identifier       uuid        NOT NULL,
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    extend_by_days           int         NOT NULL CHECK (extend_by_days BETWEEN 1 AND 90),
    reason_code              int         NOT NULL CHECK (reason_code BETWEEN 0 AND 3),
    success                  boolean     NULL,
    effective_date           timestamptz NULL,
    web_order_line_item_id   text        NULL,
    apple_error_code         int         NULL,
    error                    text        NULL,
    created_at               timestamptz NOT NULL,
    completed_at             timestamptz NULL,
    PRIMARY KEY (project_id, request_identifier)
);
CREATE INDEX renewal_extensions_purchase_idx ON renewal_extensions (project_id, original_transaction_id, created_at);
