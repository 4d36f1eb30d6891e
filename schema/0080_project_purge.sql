-- 0080_project_purge: a project's deletion empties the tables without a foreign key to projects by an explicit call
-- (bouncer_project_purge, in PostgresProjectStore.deleteProject's transaction, before its DELETE) instead of the
-- trigger 0075 added: on Citus, projects is a reference table and a trigger on it cannot run statements on the
-- distributed tables (deploy/citus.md); the one path that deletes a project (projects.account_id is ON DELETE
-- RESTRICT) calls it on either. The charts' run tables (0078) join the roll-ups without a key, as 0075's did.
DROP TRIGGER projects_deleted ON projects;
DROP FUNCTION bouncer_project_deleted();
ALTER TABLE revenue_runs DROP CONSTRAINT revenue_runs_project_id_fkey;
ALTER TABLE revenue_run_days DROP CONSTRAINT revenue_run_days_project_id_fkey;
