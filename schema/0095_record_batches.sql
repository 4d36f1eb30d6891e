-- 0095_record_batches (issue 22): the types of the set-based record call. bouncer_recording is one
-- bouncer_record_transaction call's inputs (plus its place in the batch), so a group commit passes its batch as one
-- array to bouncer_record_transactions (schema/functions/), which records a batch of first posts with one statement
-- per table instead of one call and seven statements per receipt. bouncer_transaction_columns is what a transaction's
-- payload puts in SQL columns (bouncer_transaction_columns(payload), one author for the insert of a call and of a
-- batch).
CREATE TYPE bouncer_recording AS (
    ord bigint, project_id uuid, transaction_id text, original_transaction_id text, product_id text, type text,
    environment text, bundle_id text, purchase_date timestamptz, original_purchase_date timestamptz,
    expires_date timestamptz, revocation_date timestamptz, revocation_reason int, app_account_token uuid,
    ownership_type text, signed_date timestamptz, payload jsonb, user_id text, device_id text, transfer_policy text,
    now timestamptz, source text);

CREATE TYPE bouncer_transaction_columns AS (
    app_transaction_id text, offer_period text, offer_discount_type text, revocation_type text,
    revocation_percentage bigint, advanced_commerce_info jsonb, price_milli bigint, currency text);
