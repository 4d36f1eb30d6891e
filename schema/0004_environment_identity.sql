-- 0004_environment_identity: the environment is part of every purchase's identity, so Xcode and LocalTesting
-- data (which anyone can sign with a self-made certificate) lives in its own rows and can never replace, revoke,
-- extend or re-own a Sandbox or Production purchase that reuses its ids, nor the reverse. Also: a transaction's
-- bundle_id, one of its identity fields (with original_transaction_id, product_id and environment) that the
-- store refuses to change (409 TRANSACTION_CONFLICT).
--
-- Existing rows keep their ids and gain their own environment in their keys: a purchase's environment is
-- that of its latest transaction; bindings, ownership events and the transactions index follow the purchase.
-- Primary keys still start with project_id and every foreign key still includes it.

-- transactions: (project, environment, transaction id); bundle_id from the signed payload, else the project's.
ALTER TABLE transactions ADD COLUMN bundle_id text;
UPDATE transactions t SET bundle_id = COALESCE(t.payload->>'bundleId', p.bundle_id)
FROM projects p WHERE p.id = t.project_id;
ALTER TABLE transactions ALTER COLUMN bundle_id SET NOT NULL;
ALTER TABLE transactions DROP CONSTRAINT transactions_pkey;
ALTER TABLE transactions ADD PRIMARY KEY (project_id, environment, transaction_id);
DROP INDEX transactions_original_idx;
CREATE INDEX transactions_original_idx ON transactions (project_id, environment, original_transaction_id);

-- purchases and the bindings that reference them.
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_project_id_original_transaction_id_fkey;
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_pkey;
ALTER TABLE purchases DROP CONSTRAINT purchases_pkey;
ALTER TABLE purchases ADD PRIMARY KEY (project_id, environment, original_transaction_id);

ALTER TABLE subscriptions ADD COLUMN environment text;
UPDATE subscriptions s SET environment = p.environment
FROM purchases p WHERE p.project_id = s.project_id AND p.original_transaction_id = s.original_transaction_id;
ALTER TABLE subscriptions ALTER COLUMN environment SET NOT NULL;
ALTER TABLE subscriptions ADD PRIMARY KEY (project_id, user_id, environment, original_transaction_id);
ALTER TABLE subscriptions ADD FOREIGN KEY (project_id, environment, original_transaction_id)
    REFERENCES purchases (project_id, environment, original_transaction_id) ON DELETE CASCADE;
DROP INDEX subscriptions_original_idx;
CREATE INDEX subscriptions_original_idx ON subscriptions (project_id, environment, original_transaction_id);

-- ownership_events: the move happened in the purchase's world. Purchases are only ever deleted with their
-- project, so every event finds its purchase; Production is a fallback that no written row needs.
ALTER TABLE ownership_events ADD COLUMN environment text;
UPDATE ownership_events e SET environment = p.environment
FROM purchases p WHERE p.project_id = e.project_id AND p.original_transaction_id = e.original_transaction_id;
UPDATE ownership_events SET environment = 'Production' WHERE environment IS NULL;
ALTER TABLE ownership_events ALTER COLUMN environment SET NOT NULL;
DROP INDEX ownership_events_original_idx;
CREATE INDEX ownership_events_original_idx ON ownership_events (project_id, environment, original_transaction_id);

-- pending_renewals: renewal info waits for the purchase of its own environment.
ALTER TABLE pending_renewals DROP CONSTRAINT pending_renewals_pkey;
ALTER TABLE pending_renewals ADD PRIMARY KEY (project_id, environment, original_transaction_id);

-- notifications: deduplicated per environment, so a forged Xcode notification that reuses a real
-- notificationUUID cannot make Apple's delivery look like a redelivery. Every verified notification names its
-- environment; '' marks a row written without one (none are: verification requires it).
UPDATE notifications SET environment = '' WHERE environment IS NULL;
ALTER TABLE notifications ALTER COLUMN environment SET NOT NULL;
ALTER TABLE notifications DROP CONSTRAINT notifications_pkey;
-- The per-project cap on Xcode/LocalTesting rows (PostgresNotificationStore) reads them through this key's
-- (project_id, environment) prefix: at most the cap plus one rows, however many real notifications there are.
ALTER TABLE notifications ADD PRIMARY KEY (project_id, environment, notification_uuid);
