-- Kept for the previous release's binaries during a rollout (their record statements call it lateral to each
-- bouncer_record_transaction call); this release reads the same facts from bouncer_record_transaction's own result
-- (stored_expires_date, stored_revocation_date, stored_signed_date, schema/0094) and calls it nowhere. A later
-- release drops it. What it reads: the stored transaction as the record call just left it (a VOLATILE function
-- takes a fresh snapshot, so it sees the calling statement's earlier writes).
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
