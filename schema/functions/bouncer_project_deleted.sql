-- Before a project's row is deleted (trigger projects_deleted, 0075): the rows of the tables with no foreign key to
-- projects go, as a cascade would take them (bouncer_project_delete_rows). First the project's record lock (16981: every bouncer_record_transaction
-- holds it shared) and its deriver lock (16980), exclusively: a receipt or a derivation in flight commits before the
-- deletes below take their snapshots, so its rows are seen and deleted; one that comes later waits for this
-- transaction and then finds no project (the record refuses with 23503) or no log rows (the deriver writes nothing).
-- BEFORE, not AFTER: the locks are taken before this transaction holds the project's row, which a receipt in flight
-- may still want to share-lock (the foreign keys that remain).
CREATE OR REPLACE FUNCTION bouncer_project_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- On Citus the trigger fires on the shards of `projects` (a reference table: one on every node), where no
    -- statement may reach a distributed table; there the project store runs bouncer_project_delete_rows on the
    -- coordinator before its DELETE instead (deploy/citus.md).
    IF TG_TABLE_NAME = 'projects' THEN
        PERFORM bouncer_project_delete_rows(OLD.id);
    END IF;
    RETURN OLD;
END;
$$;
