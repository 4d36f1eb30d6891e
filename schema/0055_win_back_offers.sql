-- 0055_win_back_offers: the win-back offers a subscriber may redeem, from renewal info's eligibleWinBackOfferIds
-- (issue 25 item 6), best first as Apple orders them. Written with the rest of the renewal info by
-- bouncer_record_renewal (and adopted from pending_renewals by bouncer_record_transaction); kept in the deriver's
-- copy so webhook payloads show the list announced with each purchase. NULL: renewal info without the field, or
-- none yet (shown as []). Nullable without a default: adding the columns rewrites no table.
ALTER TABLE purchases ADD COLUMN eligible_win_back_offer_ids text[];
ALTER TABLE pending_renewals ADD COLUMN eligible_win_back_offer_ids text[];
ALTER TABLE webhook_purchase_states ADD COLUMN eligible_win_back_offer_ids text[];

-- A new argument each (the list); the files create the new signatures in the same migrate run.
DROP FUNCTION bouncer_record_renewal(uuid, text, text, text, int, int, timestamptz, boolean, int, int, text,
    timestamptz, text, timestamptz, jsonb, timestamptz);
DROP FUNCTION bouncer_record_notification(uuid, uuid, text, text, text, text, timestamptz, jsonb, bigint, boolean,
    text, text, text, text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, int, uuid, text,
    timestamptz, jsonb, text, text, text, int, int, timestamptz, boolean, int, int, text, timestamptz, text,
    timestamptz, jsonb, timestamptz, text);
