-- A receipt's answer shows each record's status from its STORED transaction, not from the receipt's own (possibly
-- older) facts: a refund signed after the receipt was created must show as `revoked`.
--
-- The batch write (PostgresPurchaseStore.recordTransactions) reads the stored row in its own statement, still one
-- round trip. A plain join on `transactions` in that statement cannot do it: the calling statement scans with the
-- snapshot it started with, so it sees none of the rows bouncer_record_transaction writes (a new receipt's rows
-- read as missing, a duplicate record sees its first copy's row as absent). A VOLATILE function takes a fresh
-- snapshot for its query and so sees the calling statement's earlier writes; called right after the record call
-- (lateral to its result, so it runs after it), it reads the row as that call left it. The row is locked by the
-- call's upsert until commit, so what it reads is what commits.
CREATE OR REPLACE FUNCTION bouncer_stored_transaction(p_project_id uuid, p_environment text, p_transaction_id text)
RETURNS transactions
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_stored transactions;
BEGIN
    SELECT * INTO v_stored FROM transactions t
    WHERE t.project_id = p_project_id AND t.environment = p_environment AND t.transaction_id = p_transaction_id;
    RETURN v_stored;
END;
$$;
