-- The log's overview fact (purchase_changes' data.tx, 0035): the transaction's overview fields before and after a
-- record call (bouncer_overview_fields; NULL: not stored) and its purchase's (bouncer_overview_purchase_fields), each
-- pair only when it differs; NULL when neither does.
CREATE OR REPLACE FUNCTION bouncer_change_tx(p_tx_old jsonb, p_tx_new jsonb, p_purchase_old jsonb,
    p_purchase_new jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p_tx_new IS DISTINCT FROM p_tx_old OR p_purchase_new IS DISTINCT FROM p_purchase_old
        THEN jsonb_build_object(
            'old', CASE WHEN p_tx_new IS DISTINCT FROM p_tx_old THEN p_tx_old END,
            'new', CASE WHEN p_tx_new IS DISTINCT FROM p_tx_old THEN p_tx_new END,
            'p_old', CASE WHEN p_purchase_new IS DISTINCT FROM p_purchase_old THEN p_purchase_old END,
            'p_new', CASE WHEN p_purchase_new IS DISTINCT FROM p_purchase_old THEN p_purchase_new END) END
$$;
