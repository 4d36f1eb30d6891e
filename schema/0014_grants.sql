-- 0014_grants: manual grants (POST /v1/admin/projects/{id}/users/{userId}/grants). Removing a grant sets revoked_at
-- (soft delete) so the customer timeline keeps explaining it. Erasing a user (DELETE …/users/{userId}) clears
-- user_id and reason: the row stays as an anonymous record that an entitlement was given.
CREATE TABLE grants (
    project_id   uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    id           uuid        NOT NULL,
    user_id      text,
    entitlement  text        NOT NULL,
    expires_at   timestamptz,
    reason       text        NOT NULL,
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    PRIMARY KEY (project_id, id)
);
COMMENT ON COLUMN grants.user_id IS 'NULL once the user was erased';
COMMENT ON COLUMN grants.revoked_at IS 'set when an admin removed the grant; the row is kept for the timeline';
-- GET /v1/subscriptions reads a user's standing grants in the same statement as their purchases.
CREATE INDEX grants_user_idx ON grants (project_id, user_id, created_at) WHERE user_id IS NOT NULL;

-- The timeline and erase find a user's ownership moves by either side.
CREATE INDEX ownership_events_from_idx ON ownership_events (project_id, from_user_id) WHERE from_user_id IS NOT NULL;
CREATE INDEX ownership_events_to_idx ON ownership_events (project_id, to_user_id) WHERE to_user_id IS NOT NULL;
-- … and what reconciliation changed on a purchase (the primary key is by run).
CREATE INDEX reconcile_changes_original_idx ON reconcile_changes (project_id, environment, original_transaction_id);
