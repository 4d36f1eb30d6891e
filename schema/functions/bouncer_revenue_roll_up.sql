-- Brings revenue_transactions (schema/0062) up to date for the purchases of consumed log rows (p_changes: a JSON
-- array of {"environment", "original_transaction_id"}, rows without tx omitted, as the deriver hands them to
-- bouncer_overview_roll_up, which calls this). Replaces each purchase's rows with its current facts
-- (bouncer_revenue_rows): idempotent, so a replay or a crash between batches changes nothing. Called in the
-- transaction that deletes the log rows, never the receipt's.
CREATE OR REPLACE FUNCTION bouncer_revenue_roll_up(p_project_id uuid, p_changes jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
BEGIN
    IF p_changes IS NULL THEN
        RETURN;
    END IF;
    FOR r IN
        SELECT e.environment, array_agg(DISTINCT e.original_transaction_id) AS ids
        FROM jsonb_to_recordset(p_changes) e (environment text, original_transaction_id text)
        WHERE e.original_transaction_id IS NOT NULL
        GROUP BY e.environment
    LOOP
        DELETE FROM revenue_transactions v
        WHERE v.project_id = p_project_id AND v.original_transaction_id = ANY (r.ids) AND v.environment = r.environment;
        INSERT INTO revenue_transactions SELECT * FROM bouncer_revenue_rows(p_project_id, r.environment, r.ids);
    END LOOP;
END;
$$;
