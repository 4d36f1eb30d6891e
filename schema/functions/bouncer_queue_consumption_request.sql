-- The trigger on notifications (0010) that queues a CONSUMPTION_REQUEST for the consumption responder.
--
-- The nested JWS was verified (chain, signature, bundle, environment) before the notification row was written, so
-- its payload is read here without checking again; a payload that does not decode queues the row without a
-- transaction id (answered 'failed'), and never refuses the notification.
CREATE OR REPLACE FUNCTION bouncer_queue_consumption_request() RETURNS trigger
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
