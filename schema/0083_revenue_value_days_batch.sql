-- 0083_revenue_value_days_batch (issue 22): bouncer_revenue_values_sync returns its purchase's moves of
-- revenue_value_days instead of writing them (bouncer_revenue_roll_up moves the day rows once per batch:
-- bouncer_revenue_value_days_move); its return type changes, which CREATE OR REPLACE cannot do. Its new definition is
-- schema/functions/bouncer_revenue_values_sync.sql.
-- IF EXISTS: a new database creates the functions from the files after its last migration.
DROP FUNCTION IF EXISTS bouncer_revenue_values_sync(uuid, text, text, timestamptz);
