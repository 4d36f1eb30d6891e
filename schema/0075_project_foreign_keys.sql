-- 0075_project_foreign_keys: the receipt's tables and the rollups derived from its log no longer check `projects`.
--
-- A foreign key to projects ran, for every row inserted, `SELECT 1 FROM projects … FOR KEY SHARE` on the tenant's
-- one row: 7.0 checks per POST in bench/api's POST phase (11.7 with a webhook), 2 buffers each, and the row lock
-- itself: the first check of each transaction writes a tuple-lock WAL record on projects' page, and when another
-- transaction holds it too (every concurrent receipt of the project), a new MultiXact (bench/README.md, "Sixth
-- round": 0.19 MultiXacts per POST; their rate ages every table towards an anti-wraparound vacuum). These tables are
-- written only by bouncer_record_transaction (transactions, purchases; transaction_jws in the same statement) and by
-- the deriver's roll-ups under its project lock (16980), which read only the log. Tenant integrity comes from the
-- writers instead: bouncer_record_transaction takes the project's shared lock (16981) and then finds the project
-- (23503, as the key did, when it is gone); a project's deletion (trigger projects_deleted, BEFORE DELETE) takes
-- 16981 and 16980 exclusively, so receipts and derivations in flight commit first, and deletes these tables' rows
-- and the project's pending log rows itself. Every other foreign key to projects stays.
ALTER TABLE transactions DROP CONSTRAINT transactions_project_id_fkey;
ALTER TABLE transaction_jws DROP CONSTRAINT transaction_jws_project_id_fkey;
ALTER TABLE purchases DROP CONSTRAINT purchases_project_id_fkey;
ALTER TABLE overview_days DROP CONSTRAINT overview_days_project_id_fkey;
ALTER TABLE overview_instants DROP CONSTRAINT overview_instants_project_id_fkey;
ALTER TABLE overview_trials DROP CONSTRAINT overview_trials_project_id_fkey;
ALTER TABLE revenue_transactions DROP CONSTRAINT revenue_transactions_project_id_fkey;

-- Placeholder: schema/functions/bouncer_project_deleted.sql replaces it in this migration's commit.
CREATE FUNCTION bouncer_project_deleted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$;
CREATE TRIGGER projects_deleted BEFORE DELETE ON projects FOR EACH ROW EXECUTE FUNCTION bouncer_project_deleted();
