-- Keeps webhook_queue equal to each user's head event (the oldest pending one; a user-less event is its own head)
-- after an UPDATE of webhook_events, in the writer's transaction (statement trigger webhook_events_queue, 0045: one
-- run per statement, over its transition tables, set-based: a batch of outcomes costs five statements, not three
-- per outcome). A queue row is due at the event's retry time, or while leased (the claim writes the lease on the
-- queue row only) when its lease ends. When a head is delivered or failed its user's next pending event enters; an
-- event retried by hand goes before a later head of its user. An INSERT is bouncer_webhook_queue_added's, a DELETE
-- bouncer_webhook_queue_deleted's.
--
-- Moving a head on takes the user's lock (16979) first, the one bouncer_emit_event holds until its commit, and looks
-- for the next event in a later statement (a new snapshot): an event written for the user meanwhile is either
-- committed and seen, or written after this commit and finds no head, so it enters itself. The dispatcher takes the
-- lock with pg_try_advisory_xact_lock before (bouncer_webhook_complete): it never waits on a deriver.
CREATE OR REPLACE FUNCTION bouncer_webhook_queue_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_projects uuid[];
    v_users text[];
    v_seqs bigint[];
BEGIN
    -- Still pending, same user: due again at its retry time (only a head has a row); a manual retry of a leased
    -- event waits for the lease.
    UPDATE webhook_queue q SET next_attempt_at = CASE WHEN q.lease_owner IS NULL THEN n.next_attempt_at
                                                      ELSE GREATEST(q.next_attempt_at, n.next_attempt_at) END
    FROM before_rows o JOIN after_rows n ON n.project_id = o.project_id AND n.seq = o.seq
    WHERE o.status = 'pending' AND n.status = 'pending' AND o.user_id IS NOT DISTINCT FROM n.user_id
      AND q.project_id = n.project_id AND q.seq = n.seq;

    -- No longer pending, or moved to another user: the head leaves; its user's next pending event enters.
    WITH gone AS (
        DELETE FROM webhook_queue q
        USING before_rows o JOIN after_rows n ON n.project_id = o.project_id AND n.seq = o.seq
        WHERE o.status = 'pending' AND NOT (n.status = 'pending' AND o.user_id IS NOT DISTINCT FROM n.user_id)
          AND q.project_id = o.project_id AND q.seq = o.seq
        RETURNING o.project_id, o.user_id, o.seq)
    SELECT array_agg(g.project_id), array_agg(g.user_id), array_agg(g.seq) INTO v_projects, v_users, v_seqs
    FROM gone g WHERE g.user_id IS NOT NULL;
    IF v_projects IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(16979, hashtext(g.project_id::text || '/' || g.user_id))
        FROM unnest(v_projects, v_users) AS g(project_id, user_id)
        ORDER BY g.project_id, g.user_id;
        INSERT INTO webhook_queue (project_id, seq, user_id, next_attempt_at, attempts)
        SELECT e.project_id, e.seq, e.user_id, e.next_attempt_at, e.attempts
        FROM unnest(v_projects, v_users, v_seqs) AS g(project_id, user_id, seq)
        CROSS JOIN LATERAL (
            SELECT e1.* FROM webhook_events e1
            WHERE e1.project_id = g.project_id AND e1.user_id = g.user_id AND e1.seq > g.seq
              AND e1.status = 'pending'
            ORDER BY e1.seq LIMIT 1) e
        ON CONFLICT DO NOTHING;
    END IF;

    -- Pending now, or pending under another user: retried by hand, it goes before a later head of its user; it
    -- enters when its user has no head.
    SELECT array_agg(n.project_id), array_agg(n.user_id), array_agg(n.seq) INTO v_projects, v_users, v_seqs
    FROM before_rows o JOIN after_rows n ON n.project_id = o.project_id AND n.seq = o.seq
    WHERE n.status = 'pending' AND NOT (o.status = 'pending' AND o.user_id IS NOT DISTINCT FROM n.user_id);
    IF v_projects IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(16979, hashtext(g.project_id::text || '/' || g.user_id))
        FROM (SELECT DISTINCT g1.project_id, g1.user_id FROM unnest(v_projects, v_users) AS g1(project_id, user_id)
              WHERE g1.user_id IS NOT NULL) g
        ORDER BY g.project_id, g.user_id;
        DELETE FROM webhook_queue q
        USING (SELECT g1.project_id, g1.user_id, min(g1.seq) AS seq
               FROM unnest(v_projects, v_users, v_seqs) AS g1(project_id, user_id, seq)
               WHERE g1.user_id IS NOT NULL GROUP BY g1.project_id, g1.user_id) g
        WHERE q.project_id = g.project_id AND q.user_id = g.user_id AND q.seq > g.seq;
        INSERT INTO webhook_queue (project_id, seq, user_id, next_attempt_at, attempts)
        SELECT e.project_id, e.seq, e.user_id, e.next_attempt_at, e.attempts
        FROM unnest(v_projects, v_seqs) AS g(project_id, seq)
        JOIN after_rows e ON e.project_id = g.project_id AND e.seq = g.seq
        ORDER BY e.seq
        ON CONFLICT (project_id, user_id) WHERE user_id IS NOT NULL DO NOTHING;
    END IF;
    RETURN NULL;
END;
$$;
