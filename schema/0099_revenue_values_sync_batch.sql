-- 0099_revenue_values_sync_batch (issue 22): bouncer_revenue_values_sync brings a batch's purchases up to date in one
-- statement (arrays of environments, purchases and their earliest changed dates) instead of one purchase per call; a
-- new argument list is a new function, so the per-purchase one is dropped here. Its new definition is
-- schema/functions/bouncer_revenue_values_sync.sql.
DROP FUNCTION IF EXISTS bouncer_revenue_values_sync(uuid, text, text, timestamptz);
