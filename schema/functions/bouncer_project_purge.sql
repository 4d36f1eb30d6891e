-- Before a project's row is deleted (PostgresProjectStore.deleteProject, in the same transaction): the rows of the
-- tables with no foreign key to projects (0075, 0076, 0080) go, as a cascade would take them. First the project's
-- record lock (16981: every bouncer_record_transaction holds it shared) and its deriver lock (16980), exclusively: a
-- receipt or a derivation in flight commits before the deletes below take their snapshots, so its rows are seen and
-- deleted; one that comes later waits for this transaction and then finds no project (the record refuses with 23503)
-- or no log rows (the deriver writes nothing). Called before the DELETE of the project's row, so the locks are taken
-- before this transaction holds that row, which a receipt in flight may still want to share-lock (the foreign keys
-- that remain).
CREATE OR REPLACE FUNCTION bouncer_project_purge(p_project uuid) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(16981, hashtext(p_project::text));
    PERFORM pg_advisory_xact_lock(16980, hashtext(p_project::text));
    DELETE FROM purchase_changes c WHERE c.project_id = p_project;
    DELETE FROM transaction_jws j WHERE j.project_id = p_project;
    DELETE FROM transactions t WHERE t.project_id = p_project;
    DELETE FROM purchases p WHERE p.project_id = p_project;
    DELETE FROM overview_days o WHERE o.project_id = p_project;
    DELETE FROM overview_instants o WHERE o.project_id = p_project;
    DELETE FROM overview_trials o WHERE o.project_id = p_project;
    DELETE FROM revenue_transactions v WHERE v.project_id = p_project;
    DELETE FROM revenue_days d WHERE d.project_id = p_project;
    DELETE FROM revenue_runs r WHERE r.project_id = p_project;
    DELETE FROM revenue_run_days r WHERE r.project_id = p_project;
    DELETE FROM revenue_values s WHERE s.project_id = p_project;
    DELETE FROM revenue_value_days s WHERE s.project_id = p_project;
    DELETE FROM revenue_cohorts s WHERE s.project_id = p_project;
    DELETE FROM revenue_ltv_purchases l WHERE l.project_id = p_project;
    DELETE FROM revenue_ltv_customers l WHERE l.project_id = p_project;
    DELETE FROM revenue_ltv_days l WHERE l.project_id = p_project;
    DELETE FROM revenue_movement_days m WHERE m.project_id = p_project;
END;
$$;
