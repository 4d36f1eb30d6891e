-- Records a batch of finished delivery attempts in the caller's transaction (the dispatcher's one commit per batch):
-- each attempt's row, and its event moved on (delivered, pending again at its retry time, or failed) while p_owner
-- still holds its lease (webhook_queue.lease_owner). The finished heads (delivered or failed) leave the queue and
-- their users' next pending events enter here, in two statements for the whole batch; the queue's row trigger
-- (bouncer_webhook_queue_sync) then finds no queue row to move for them.
-- Element i of the arrays is one attempt; times are microseconds since 1970.
--
-- Returns the attempts left for later: their user's lock (16979) is held by a transaction writing events for that
-- user (a deriver), which this one must not wait for (the deriver may be waiting for a user this batch holds).
-- The dispatcher records those in its next batch; their leases still hold them. The event rows are locked first,
-- then the users' locks tried, the order erase's DELETE and its trigger take them; the queue rows are locked by the
-- statements that move them, checking the lease (`wp5`: a FOR UPDATE of each before was one more tuple-lock WAL
-- record and index probe per event).
--
-- Every statement here reaches its rows by key from the batch's arrays (primary-key probes, the successor's one
-- entry of webhook_events_user_seq_idx), never by scanning a table: enable_seqscan is off for the call. With it on,
-- the planner read the lease and delete statements' `q.seq = ANY (…)` as a selective filter and scanned the whole
-- queue (heap and dead versions: a drain leaves ~2 per delivered event until autovacuum comes), so a batch cost
-- grew with the queue's bloat, not the batch (StorageTests.WebhookBatchClaimTests.testACompleteAndClaimNeverScanTheQueue).
-- The rows locked are found from the batch, sorted as the primary key (the locks' order), one lateral probe of its
-- key each (a subquery with FOR UPDATE is never flattened into a join): as a join, statistics of before a burst
-- (the events' `project_id = ANY (…)` estimated at one row) made the project's events the outer side, each compared
-- with the whole batch (3,504 events x 16 compared, 509 buffers and ~15 ms a call late in a 22,000-event drain,
-- growing with the project: `wp4`). Hash and merge joins are off as well: they read the project's events too. And
-- the statements are planned once per session, generic: a custom plan reads `project_id = ANY ('{…}')` with the
-- batch's project as a constant, which such statistics estimate at one row, and then found a head's next pending
-- event by the primary key (the project's events after the head, filtered by user) rather than by
-- webhook_events_user_seq_idx (`StorageTests.WebhookBatchClaimTests`: 8,320 events read for a batch of 16).
CREATE OR REPLACE FUNCTION bouncer_webhook_complete(p_owner text, p_project_ids uuid[], p_seqs bigint[],
    p_attempts int[], p_at_us bigint[], p_status_codes int[], p_errors text[], p_durations_ms int[],
    p_statuses text[], p_next_us bigint[])
RETURNS TABLE (project_id uuid, seq bigint)
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
    SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    v_ready bigint[] := '{}';
    v_later bigint[] := '{}';
    v_mine bigint[];
    v_gone_projects uuid[];
    v_gone_seqs bigint[];
    v_gone_users text[];
    v_gone_all bigint[];
    r record;
BEGIN
    -- Custom plans on Citus, as bouncer_derive_changes says.
    IF current_setting('citus.version', true) IS NOT NULL THEN
        PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
    END IF;
    FOR r IN
        SELECT e.project_id, e.seq, e.user_id
        FROM (SELECT o.project_id, o.seq FROM unnest(p_project_ids, p_seqs) AS o(project_id, seq)
              ORDER BY o.project_id, o.seq) o
        CROSS JOIN LATERAL (SELECT e1.project_id, e1.seq, e1.user_id FROM webhook_events e1
            WHERE e1.project_id = o.project_id AND e1.seq = o.seq AND e1.project_id = ANY (p_project_ids)
            FOR UPDATE) e
        ORDER BY o.project_id, o.seq
    LOOP
        IF r.user_id IS NULL
           OR pg_try_advisory_xact_lock(16979, hashtext(r.project_id::text || '/' || r.user_id)) THEN
            v_ready := v_ready || r.seq;
        ELSE
            v_later := v_later || r.seq;
        END IF;
    END LOOP;
    -- The leases this owner still holds (on the queue rows, where the claim wrote them), moved on by the statements
    -- that check them: no separate FOR UPDATE of the queue rows (the events' locks above already order this
    -- transaction with erase, and a claim skips what these statements lock). A retry's lease ends now, so the
    -- event's update below makes its row due at the retry time. Delivered and failed heads leave the queue.
    IF 'pending' = ANY (p_statuses) THEN
        WITH retried AS (
            UPDATE webhook_queue q SET lease_owner = NULL
            FROM unnest(p_project_ids, p_seqs, p_statuses) AS o(project_id, seq, status)
            WHERE q.project_id = o.project_id AND q.seq = o.seq AND o.status = 'pending' AND q.seq = ANY (v_ready)
              AND q.lease_owner = p_owner
            RETURNING q.seq)
        SELECT COALESCE(array_agg(r.seq), '{}') INTO v_mine FROM retried r;
    END IF;

    -- Delivered and failed heads leave the queue; each one's user (whose lock this transaction holds: v_ready) gets
    -- its next pending event, looked for in a later statement than the lock (a new snapshot; see
    -- bouncer_webhook_queue_sync). The probe's ORDER BY is the index's (webhook_events_user_seq_idx), so any plan
    -- reads one entry per user.
    WITH gone AS (
        DELETE FROM webhook_queue q
        USING unnest(p_project_ids, p_seqs, p_statuses) AS o(project_id, seq, status)
        WHERE q.project_id = o.project_id AND q.seq = o.seq AND o.status <> 'pending' AND q.seq = ANY (v_ready)
          AND q.lease_owner = p_owner
        RETURNING q.project_id, q.seq, q.user_id)
    SELECT array_agg(g.project_id) FILTER (WHERE g.user_id IS NOT NULL),
        array_agg(g.seq) FILTER (WHERE g.user_id IS NOT NULL), array_agg(g.user_id) FILTER (WHERE g.user_id IS NOT NULL),
        COALESCE(array_agg(g.seq), '{}')
    INTO v_gone_projects, v_gone_seqs, v_gone_users, v_gone_all
    FROM gone g;
    v_mine := COALESCE(v_mine, '{}') || v_gone_all;
    IF v_gone_seqs IS NOT NULL THEN
        INSERT INTO webhook_queue (project_id, seq, user_id, next_attempt_at, attempts)
        SELECT n.project_id, n.seq, n.user_id, n.next_attempt_at, n.attempts
        FROM unnest(v_gone_projects, v_gone_users, v_gone_seqs) AS g(project_id, user_id, seq)
        CROSS JOIN LATERAL (
            SELECT e.project_id, e.seq, e.user_id, e.next_attempt_at, e.attempts FROM webhook_events e
            WHERE e.project_id = g.project_id AND e.user_id = g.user_id AND e.seq > g.seq AND e.status = 'pending'
              AND e.project_id = ANY (p_project_ids)
            ORDER BY e.project_id, e.user_id, e.seq
            LIMIT 1) n
        ON CONFLICT DO NOTHING;
    END IF;

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
