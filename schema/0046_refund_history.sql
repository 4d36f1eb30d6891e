-- 0046_refund_history: reconciliation reads each customer's Get Refund History (issue 25).
--
--   reconcile_runs.refunds_found   refunds Apple never notified: transactions a run was first to record as refunded.
--   reconcile_changes.via          also 'refund_history'.
--   reconcile_refund_revisions     per customer (an Apple account: purchases sharing an appTransactionId, or one
--                                  purchase without one), the revision the last read reached, as Apple advises
--                                  ("store the revision … to get only newly-refunded transactions"); NULL: read from
--                                  the start next time. read_at orders the customers (longest ago first).

ALTER TABLE reconcile_runs ADD COLUMN refunds_found int NOT NULL DEFAULT 0;

ALTER TABLE reconcile_changes DROP CONSTRAINT reconcile_changes_via_check;
ALTER TABLE reconcile_changes ADD CONSTRAINT reconcile_changes_via_check
    CHECK (via IN ('subscription_status', 'transaction_info', 'notification_history', 'refund_history'));

CREATE TABLE reconcile_refund_revisions (
    project_id   uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    environment  text        NOT NULL,
    customer     text        NOT NULL,
    revision     text,
    read_at      timestamptz NOT NULL,
    PRIMARY KEY (project_id, environment, customer)
);
