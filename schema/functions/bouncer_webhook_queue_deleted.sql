-- After a DELETE on webhook_events (trigger webhook_events_queue_deleted, 0031): the deleted events' queue rows go
-- (0067: no foreign key cascades them), and each user whose head went gets the oldest pending event left, which is
-- later than the oldest one deleted (the head was the oldest). Erase and a deleted webhook delete every pending
-- event, so nothing enters.
--
-- The users' locks (16979) come first: a transaction moving a user's head in (the dispatcher's complete, an
-- emitter) holds it until its commit, so the statements after the locks see that head and delete or keep it.
CREATE OR REPLACE FUNCTION bouncer_webhook_queue_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT g.project_id, g.user_id, min(g.seq) AS seq FROM gone g
        WHERE g.status = 'pending' AND g.user_id IS NOT NULL
        GROUP BY g.project_id, g.user_id
    LOOP
        PERFORM pg_advisory_xact_lock(16979, hashtext(r.project_id::text || '/' || r.user_id));
    END LOOP;
    -- Only pending events have queue rows. One statement per project, filtered on it: on Citus this trigger runs on
    -- the shard, where a statement may only be routed to the tenant's shard, and never joins the transition table.
    FOR r IN
        SELECT g.project_id, array_agg(g.seq) AS seqs FROM gone g WHERE g.status = 'pending' GROUP BY g.project_id
    LOOP
        DELETE FROM webhook_queue q WHERE q.project_id = r.project_id AND q.seq = ANY (r.seqs);
    END LOOP;
    FOR r IN
        SELECT g.project_id, g.user_id, min(g.seq) AS seq FROM gone g
        WHERE g.status = 'pending' AND g.user_id IS NOT NULL
        GROUP BY g.project_id, g.user_id
    LOOP
        INSERT INTO webhook_queue (project_id, seq, user_id, next_attempt_at, attempts)
        SELECT e.project_id, e.seq, e.user_id, e.next_attempt_at, e.attempts FROM webhook_events e
        WHERE e.project_id = r.project_id AND e.user_id = r.user_id AND e.seq > r.seq AND e.status = 'pending'
          AND NOT EXISTS (SELECT 1 FROM webhook_queue q WHERE q.project_id = r.project_id AND q.user_id = r.user_id)
        ORDER BY e.project_id, e.user_id, e.seq LIMIT 1
        ON CONFLICT DO NOTHING;
    END LOOP;
    RETURN NULL;
END;
$$;
