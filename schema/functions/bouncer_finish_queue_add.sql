-- Queues Finish Transaction (schema/0047) for the newly stored consumables and non-consumables of consumed log rows
-- (p_changes: a JSON array of {"environment", "original_transaction_id", "tx"}, as bouncer_derive_changes and
-- bouncer_webhook_seed consume them; tx without "old": the transaction was not stored before) when the project
-- finishes transactions. Runs in the transaction that deletes the rows, so each transaction is queued once; never in
-- the receipt's transaction.
CREATE OR REPLACE FUNCTION bouncer_finish_queue_add(p_project_id uuid, p_changes jsonb) RETURNS void
-- PL/pgSQL, not SQL: Citus plans no statement of an SQL function whose parameters name the tenant.
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    INSERT INTO transaction_finishes (project_id, environment, transaction_id, next_attempt_at, created_at, updated_at)
    SELECT DISTINCT p_project_id, t.environment, t.transaction_id, now(), now(), now()
    FROM projects pr
    CROSS JOIN jsonb_array_elements(COALESCE(p_changes, '[]'::jsonb)) AS c(e)
    JOIN transactions t ON t.project_id = p_project_id AND t.environment = c.e ->> 'environment'
        AND t.original_transaction_id = c.e ->> 'original_transaction_id'
    WHERE pr.id = p_project_id AND pr.finish_transactions
      AND c.e ->> 'environment' IN ('Production', 'Sandbox')
      AND c.e -> 'tx' ? 'new' AND NOT (c.e -> 'tx' ? 'old')
      AND c.e -> 'tx' -> 'new' ->> 'type' IN ('Consumable', 'Non-Consumable')
      AND t.type IN ('Consumable', 'Non-Consumable')
    ON CONFLICT DO NOTHING;
END;
$$;
