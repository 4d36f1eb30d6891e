-- The deferred effects of one recording transaction, as 0021's triggers ran them at its commit (p_at, the
-- transaction's now()): the queue of p_steps in order, a purchase's holders being those at the end (by user id),
-- each user refreshed once, at the first mention, with the transaction's final state (the last facts of each
-- purchase, the last holds/drops of each user and purchase). One statement: linear in the steps. The refreshes between
-- two purchase.transferred events run together (bouncer_webhook_refresh_users: a few statements for all of them).
CREATE OR REPLACE FUNCTION bouncer_derive_commit(p_project_id uuid, p_at timestamptz, p_steps bouncer_derive_step[])
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    v_users text[] := '{}';
    v_targets jsonb[] := '{}';
BEGIN
    FOR r IN
        WITH s AS (
            SELECT x.* FROM unnest(p_steps) WITH ORDINALITY AS x(kind, user_id, environment, original_transaction_id,
                data, ord)
        ), facts AS (
            SELECT DISTINCT ON (s.environment, s.original_transaction_id) s.environment, s.original_transaction_id,
                s.data
            FROM s WHERE s.kind = 'facts' ORDER BY s.environment, s.original_transaction_id, s.ord DESC
        ), held AS (
            SELECT DISTINCT ON (s.user_id, s.environment, s.original_transaction_id) s.user_id, s.environment,
                s.original_transaction_id, s.kind = 'holds' AS holds
            FROM s WHERE s.kind IN ('holds', 'drops') ORDER BY s.user_id, s.environment, s.original_transaction_id,
                s.ord DESC
        ), targets AS (
            -- Per user, what changed: purchases dropped, or held with new facts.
            SELECT h.user_id, jsonb_agg(jsonb_build_object('environment', h.environment,
                'original_transaction_id', h.original_transaction_id, 'holds', h.holds, 'facts', f.data)) AS targets
            FROM held h LEFT JOIN facts f ON f.environment = h.environment
                AND f.original_transaction_id = h.original_transaction_id
            WHERE NOT h.holds OR f.data IS NOT NULL
            GROUP BY h.user_id
        ), effects AS (
            SELECT s.ord, ''::text AS sub, s.kind, s.user_id, s.data FROM s WHERE s.kind IN ('refresh', 'transferred')
            UNION ALL
            SELECT s.ord, h.user_id, 'refresh', h.user_id, NULL FROM s
            JOIN held h ON h.environment = s.environment AND h.original_transaction_id = s.original_transaction_id
            WHERE s.kind = 'holders' AND h.holds
        )
        SELECT e.kind, e.user_id, e.data, COALESCE(t.targets, '[]') AS targets
        FROM (SELECT e1.*, row_number() OVER (PARTITION BY e1.kind, e1.user_id
                                              ORDER BY e1.ord, e1.sub COLLATE "C") AS nth
              FROM effects e1) e
        LEFT JOIN targets t ON t.user_id = e.user_id
        WHERE e.kind = 'transferred' OR e.nth = 1
        ORDER BY e.ord, e.sub COLLATE "C"
    LOOP
        IF r.kind = 'transferred' THEN
            IF cardinality(v_users) > 0 THEN
                PERFORM bouncer_webhook_refresh_users(p_project_id, p_at, v_users, v_targets);
                v_users := '{}';
                v_targets := '{}';
            END IF;
            PERFORM bouncer_emit_event(p_project_id, r.user_id, 'purchase.transferred', r.data);
        ELSE
            v_users := array_append(v_users, r.user_id);
            v_targets := array_append(v_targets, r.targets);
        END IF;
    END LOOP;
    IF cardinality(v_users) > 0 THEN
        PERFORM bouncer_webhook_refresh_users(p_project_id, p_at, v_users, v_targets);
    END IF;
END;
$$;
