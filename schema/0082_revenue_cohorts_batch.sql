-- 0082_revenue_cohorts_batch (issue 22): bouncer_revenue_cohort_sync takes the batch's changed purchases at once, each
-- with its earliest changed purchase date, instead of one purchase per call (bouncer_revenue_values_sync called it
-- for each); its new definition is schema/functions/bouncer_revenue_cohort_sync.sql.
-- IF EXISTS: a new database creates the functions from the files after its last migration.
DROP FUNCTION IF EXISTS bouncer_revenue_cohort_sync(uuid, text, text, timestamptz);
