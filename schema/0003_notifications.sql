-- 0003_notifications: indexes for the admin notification list (newest first, optionally per purchase).
-- The table itself is in 0001; rows are only ever inserted once (ON CONFLICT DO NOTHING) and stamped
-- processed_at, so these indexes cost one entry each per notification.
DROP INDEX notifications_original_idx;
CREATE INDEX notifications_original_idx ON notifications (project_id, original_transaction_id, received_at DESC);
CREATE INDEX notifications_received_idx ON notifications (project_id, received_at DESC);
