-- 0088_revenue_movement_days_batch (issue 26): bouncer_revenue_values_sync also returns its purchase's moves of
-- revenue_movement_days (0087) instead of writing them (bouncer_revenue_roll_up moves those rows once per batch, as
-- the value days since 0083: bouncer_revenue_movement_days_move); its return type changes, which CREATE OR REPLACE
-- cannot do. Its new definition is schema/functions/bouncer_revenue_values_sync.sql.
-- IF EXISTS: a new database creates the functions from the files after its last migration.
DROP FUNCTION IF EXISTS bouncer_revenue_values_sync(uuid, text, text, timestamptz);
