-- 0081_revenue_runs_batch (issue 22): bouncer_revenue_runs_sync takes the batch's changed purchases at once, each with
-- its earliest changed purchase date (incremental for renewals appended after the last run), instead of one purchase
-- per call; its new definition is schema/functions/bouncer_revenue_runs_sync.sql.
-- IF EXISTS: a new database creates the functions from the files after its last migration.
DROP FUNCTION IF EXISTS bouncer_revenue_runs_sync(uuid, text, text);
