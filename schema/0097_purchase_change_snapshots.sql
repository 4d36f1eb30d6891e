-- 0097_purchase_change_snapshots (issue 22): the log row keeps the purchase before and after the call as values of
-- their own composite type, bouncer_purchase_snapshot (bouncer_change_snapshot: the 13 facts webhook events compare
-- and show), in two columns, instead of two jsonb objects in purchase_changes.data ('old', 'new'): building and
-- storing the two objects was ~50-80 us of a renewal's ~375 us of PostgreSQL CPU in the receipt's transaction
-- (bench/README, session 16), and the deriver parsed them back. Its own type, not purchases' row type: the log's
-- columns do not tie later changes of the purchases table.
--
--   purchase_before   data's old: the purchase before the call, when a column the transition events compare
--                     changed (NULL for a purchase the call created: it had no holders)
--   purchase_after    data's new: the purchase after the call, with purchase_before and whenever the call bound a
--                     user
--
-- Rows already in the log move their two objects into the columns. bouncer_change_snapshot returns the type now
-- (IF EXISTS: a database migrated from scratch never had the old one; function files run after the migrations).
CREATE TYPE bouncer_purchase_snapshot AS (
    latest_transaction_id        text,
    product_id                   text,
    type                         text,
    purchase_date                timestamptz,
    expires_date                 timestamptz,
    revocation_date              timestamptz,
    revocation_reason            int,
    revocation_type              text,
    grace_period_expires_date    timestamptz,
    is_in_billing_retry          boolean,
    auto_renew_status            int,
    auto_renew_product_id        text,
    eligible_win_back_offer_ids  text[]
);
ALTER TABLE purchase_changes ADD COLUMN purchase_before bouncer_purchase_snapshot,
    ADD COLUMN purchase_after bouncer_purchase_snapshot;
UPDATE purchase_changes SET
    purchase_before = CASE WHEN data ? 'old' THEN jsonb_populate_record(NULL::bouncer_purchase_snapshot, data -> 'old') END,
    purchase_after = CASE WHEN data ? 'new' THEN jsonb_populate_record(NULL::bouncer_purchase_snapshot, data -> 'new') END,
    data = data - 'old' - 'new'
WHERE data ?| ARRAY['old', 'new'];
DROP FUNCTION IF EXISTS bouncer_change_snapshot(purchases);
DROP FUNCTION IF EXISTS bouncer_change_data(boolean, purchases, purchases, text[], jsonb, text[], text, text, jsonb);
