-- Whether a posted transaction's facts supersede its stored purchase's latest (PurchaseState.isSuperseded, the
-- executable specification; RuleTableTests runs both): the same transaction only when signed later; another one when
-- it starts later, then when signed later, then by the larger transaction id (bytewise, as Swift compares the ASCII
-- ids), so every replica picks the same one. NULL (no answer) counts as not newer. One author for
-- bouncer_record_transaction's call and bouncer_record_new_transactions' batch (an inlined SQL function).
CREATE OR REPLACE FUNCTION bouncer_purchase_superseded(p purchases, p_transaction_id text,
    p_purchase_date timestamptz, p_signed_date timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p.latest_transaction_id = p_transaction_id THEN p_signed_date > p.latest_signed_date
        WHEN p.purchase_date IS DISTINCT FROM p_purchase_date
            THEN p.purchase_date IS NULL OR p_purchase_date > p.purchase_date
        WHEN p_signed_date <> p.latest_signed_date THEN p_signed_date > p.latest_signed_date
        ELSE p_transaction_id COLLATE "C" > p.latest_transaction_id COLLATE "C" END
$$;
