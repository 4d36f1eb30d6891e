-- 0047_finish_transactions: server-managed delivery (issue 25). With projects.finish_transactions on, each newly
-- recorded consumable and non-consumable is reported finished to Apple (Finish Transaction) by a worker, after the
-- receipt's transaction: the deriver queues it (bouncer_finish_queue_add) in the transaction that consumes the log
-- row, so each is queued once; the worker claims due rows (FOR UPDATE SKIP LOCKED, a lease), calls Apple, and records
-- the outcome: finished (finished_at), retried with backoff after a 429/5xx/timeout, or failed (Apple refused it).
ALTER TABLE projects ADD COLUMN finish_transactions boolean NOT NULL DEFAULT false;

CREATE TABLE transaction_finishes (
    project_id        uuid        NOT NULL,
    environment       text        NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
    transaction_id    text        NOT NULL,
    status            text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'finished', 'failed')),
    attempts          int         NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz NOT NULL,
    lease_until       timestamptz,
    lease_token       uuid,
    last_error        text,
    apple_error_code  int,
    finished_at       timestamptz,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    PRIMARY KEY (project_id, environment, transaction_id),
    FOREIGN KEY (project_id, environment, transaction_id)
        REFERENCES transactions (project_id, environment, transaction_id) ON DELETE CASCADE
);
CREATE INDEX transaction_finishes_due_idx ON transaction_finishes (next_attempt_at) WHERE status = 'pending';
