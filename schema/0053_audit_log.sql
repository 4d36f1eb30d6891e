-- 0053_audit_log: who changed what (issue 24, item 5). One row per admin change, written in the change's own
-- transaction (`AuditRows.write`, Sources/Storage/PostgresAuditLog.swift), plus failed sign-ins. Not a tenant table:
-- an entry outlives the project and the account it names (no foreign keys), and the operator's server-wide actions
-- and failed sign-ins belong to no account (account_id NULL). Secrets never reach it (`AuditRedaction`).
CREATE TABLE audit_log (
    id              uuid        PRIMARY KEY,
    at              timestamptz NOT NULL,
    actor_type      text        NOT NULL,
    actor_id        uuid        NULL,
    actor_label     text        NOT NULL,
    action          text        NOT NULL,
    account_id      uuid        NULL,
    project_id      uuid        NULL,
    target          text        NOT NULL,
    changes         jsonb       NOT NULL,
    request_id      text        NOT NULL,
    client_address  text        NOT NULL
);

-- An account's entries, newest first (members and keys read only these; keyset pagination by (at, id)).
CREATE INDEX audit_log_account_idx ON audit_log (account_id, at DESC, id DESC);
-- The operator's unfiltered list and the retention job's oldest-first deletes.
CREATE INDEX audit_log_at_idx ON audit_log (at DESC, id DESC);
-- The project filter.
CREATE INDEX audit_log_project_idx ON audit_log (project_id, at DESC, id DESC) WHERE project_id IS NOT NULL;
