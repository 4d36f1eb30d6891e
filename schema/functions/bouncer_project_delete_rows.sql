-- The rows of a project being deleted in the tables with no foreign key to projects (schema/0075), after its record
-- lock (16981) and its deriver lock (16980): see bouncer_project_deleted, its caller on one node. On Citus the project
-- store calls it itself, before deleting the project's row, in the same transaction.
CREATE OR REPLACE FUNCTION bouncer_project_delete_rows(p_project_id uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(16981, hashtext(p_project_id::text));
    PERFORM pg_advisory_xact_lock(16980, hashtext(p_project_id::text));
    DELETE FROM purchase_changes c WHERE c.project_id = p_project_id;
    DELETE FROM transaction_jws j WHERE j.project_id = p_project_id;
    DELETE FROM transactions t WHERE t.project_id = p_project_id;
    DELETE FROM purchases p WHERE p.project_id = p_project_id;
    DELETE FROM overview_days o WHERE o.project_id = p_project_id;
    DELETE FROM overview_instants o WHERE o.project_id = p_project_id;
    DELETE FROM overview_trials o WHERE o.project_id = p_project_id;
    DELETE FROM revenue_transactions v WHERE v.project_id = p_project_id;
    DELETE FROM revenue_days d WHERE d.project_id = p_project_id;
END;
$$;
