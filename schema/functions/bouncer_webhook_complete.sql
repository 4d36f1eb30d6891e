-- Records a batch of finished delivery attempts in the caller's transaction (the dispatcher's one commit per batch):
-- each attempt's row, and its event moved on (delivered, pending again at its retry time, or failed) while p_owner
-- still holds its lease (webhook_queue.lease_owner); the queue's trigger then moves each finished head's user on
-- to the next event.
-- Element i of the arrays is one attempt; times are microseconds since 1970.
--
-- Returns the attempts left for later: their user's lock (16979) is held by a transaction writing events for that
-- user (a deriver), which this one must not wait for (the deriver may be waiting for a user this batch holds).
-- The dispatcher records those in its next batch; their leases still hold them. The event rows are locked first,
-- then the users' locks tried, the order erase's DELETE and its trigger take them.
CREATE OR REPLACE FUNCTION bouncer_webhook_complete(p_owner text, p_project_ids uuid[], p_seqs bigint[],
    p_attempts int[], p_at_us bigint[], p_status_codes int[], p_errors text[], p_durations_ms int[],
    p_statuses text[], p_next_us bigint[])
RETURNS TABLE (project_id uuid, seq bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_ready bigint[] := '{}';
    v_later bigint[] := '{}';
    v_mine bigint[];
    r record;
BEGIN
    FOR r IN
        SELECT e.project_id, e.seq, e.user_id FROM webhook_events e
        JOIN unnest(p_project_ids, p_seqs) AS o(project_id, seq) ON e.project_id = o.project_id AND e.seq = o.seq
        ORDER BY e.project_id, e.seq
        FOR UPDATE OF e
    LOOP
        IF r.user_id IS NULL
           OR pg_try_advisory_xact_lock(16979, hashtext(r.project_id::text || '/' || r.user_id)) THEN
            v_ready := v_ready || r.seq;
        ELSE
            v_later := v_later || r.seq;
        END IF;
    END LOOP;
    -- The leases this owner still holds (on the queue rows, where the claim wrote them); a retry's lease ends now,
    -- so the event's update below makes its row due at the retry time. Delivered and failed heads leave the queue.
    SELECT COALESCE(array_agg(m.seq), '{}') INTO v_mine FROM (
        SELECT q.seq FROM webhook_queue q
        JOIN unnest(p_project_ids, p_seqs) AS o(project_id, seq) ON q.project_id = o.project_id AND q.seq = o.seq
        WHERE q.lease_owner = p_owner AND q.seq = ANY (v_ready)
        FOR UPDATE OF q) m;
    UPDATE webhook_queue q SET lease_owner = NULL
    FROM unnest(p_project_ids, p_seqs, p_statuses) AS o(project_id, seq, status)
    WHERE q.project_id = o.project_id AND q.seq = o.seq AND o.status = 'pending' AND q.seq = ANY (v_mine);

    WITH o AS (
        SELECT o.project_id, o.seq, o.attempt, timestamptz 'epoch' + o.at_us * interval '1 microsecond' AS at,
            o.status_code, o.error, o.duration_ms, o.status,
            timestamptz 'epoch' + o.next_us * interval '1 microsecond' AS next_at
        FROM unnest(p_project_ids, p_seqs, p_attempts, p_at_us, p_status_codes, p_errors, p_durations_ms, p_statuses,
            p_next_us) AS o(project_id, seq, attempt, at_us, status_code, error, duration_ms, status, next_us)
        WHERE o.seq = ANY (v_ready)
    ), attempt AS (
        INSERT INTO webhook_attempts (project_id, event_seq, attempt, attempted_at, status_code, error, duration_ms,
            instance)
        SELECT o.project_id, o.seq, o.attempt, o.at, o.status_code, o.error, o.duration_ms,
            p_owner
        FROM o
        ON CONFLICT DO NOTHING)
    UPDATE webhook_events e SET status = o.status, next_attempt_at = o.next_at,
        attempts = GREATEST(e.attempts, o.attempt), last_attempt_at = o.at,
        last_status_code = o.status_code, last_error = o.error,
        delivered_at = CASE WHEN o.status = 'delivered' THEN o.at END
    FROM o
    WHERE e.project_id = o.project_id AND e.seq = o.seq AND o.seq = ANY (v_mine);

    RETURN QUERY SELECT o.project_id, o.seq FROM unnest(p_project_ids, p_seqs) AS o(project_id, seq)
        WHERE o.seq = ANY (v_later);
END;
$$;
