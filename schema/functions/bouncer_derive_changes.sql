-- Derives the webhook events of the project's p_limit oldest log rows (NULL: all) and the rest of their
-- transactions (a transaction is replayed whole) and deletes the rows, in the caller's transaction; the number of
-- rows consumed. Returns 0 without waiting when another transaction is deriving the project, unless p_wait (erase:
-- everything before it must be derived first).
--
-- Each recording transaction is replayed as 0021's triggers ran in it, from its rows alone and the copy: per row
-- in seq order transaction.refunded and the transition events (the row's holders, its before/after facts); then
-- its deferred effects at its commit ("now" is the transaction's): a purchase's holders being those at the end (by
-- user id), each user refreshed once, at the first mention, with the transaction's final state (the last facts of
-- each purchase, the last holds/drops of each user and purchase), and purchase.transferred. So a batch gives exactly
-- the events of one derive per transaction, in the same order.
--
-- Set-based: one statement lists the whole batch's effects in order (events to write, users to refresh with their
-- targets and their transaction's time); the loop only groups them. Consecutive refreshes of distinct users run
-- together (bouncer_webhook_refresh_users: four statements for all of them, each user at its own transaction's
-- time), consecutive events in one bouncer_emit_events; a group ends before a refresh of a user already in it (the
-- second must see the first's copy) and whenever the kind changes, so the events keep their order.
-- With or without a webhook, the consumed rows' tx entries are added to overview_days (0035) as they are deleted,
-- and their purchases' money facts to revenue_transactions (0062; before the events, which show them).
CREATE OR REPLACE FUNCTION bouncer_derive_changes(p_project_id uuid, p_limit int, p_wait boolean DEFAULT false) RETURNS int
-- Its statements (and those of the functions it calls) are planned once per session: custom plans re-planned
-- the large statements at every call.
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    r record;
    v_xacts xid8[];
    -- The batch's rows, in seq order.
    v_rows purchase_changes[];
    v_count int := 0;
    v_tx jsonb;
    v_rebound jsonb;
    -- The group being collected: refreshes (users, their times and targets) or events, never both.
    v_users text[] := '{}';
    v_ats timestamptz[] := '{}';
    v_targets jsonb[] := '{}';
    v_from bigint := 0;
    v_event_users text[] := '{}';
    v_types text[] := '{}';
    v_data jsonb[] := '{}';
BEGIN
    -- On Citus (deploy/citus.md) each statement is planned for its values: Citus routes a statement to the tenant's
    -- worker by its project id, which a generic plan leaves a parameter (`could not create distributed plan`).
    IF current_setting('citus.version', true) IS NOT NULL THEN
        PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
    END IF;
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(16980, hashtext(p_project_id::text));
    ELSIF NOT pg_try_advisory_xact_lock(16980, hashtext(p_project_id::text)) THEN
        RETURN 0;
    END IF;
    -- A new statement after the lock: sees a webhook created (and seeded) by the lock's previous holder.
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = p_project_id) THEN
        -- The batch's seqs as an array (one InitPlan, then one primary-key probe per row): as `seq IN (SELECT …
        -- LIMIT)` the generic plan was a nested-loop semi join rerunning the LIMIT scan for every one of the
        -- project's rows, O(backlog x batch): 254,783 buffers for 500 of 5,500 rows, 1,076 this way.
        WITH consumed AS (
            DELETE FROM purchase_changes c WHERE c.project_id = p_project_id AND c.seq = ANY (ARRAY(
                SELECT c1.seq FROM purchase_changes c1 WHERE c1.project_id = p_project_id ORDER BY c1.seq LIMIT p_limit))
            RETURNING c.environment, c.original_transaction_id, c.data -> 'tx' AS tx,
                c.data ?| ARRAY['bound', 'revoked', 'ltv'] AS rebound)
        SELECT count(*), jsonb_agg(jsonb_build_object('environment', environment,
            'original_transaction_id', original_transaction_id, 'tx', tx)) FILTER (WHERE tx IS NOT NULL),
            jsonb_agg(jsonb_build_object('environment', environment,
                'original_transaction_id', original_transaction_id)) FILTER (WHERE rebound)
        INTO v_count, v_tx, v_rebound FROM consumed;
        -- realized_ltv's customers after bindings moved (schema/0086), before the revenue roll-up (which syncs the
        -- batch's new purchases with their customer now: rebind skips them, having no rows yet).
        PERFORM bouncer_revenue_ltv_rebind(p_project_id, v_rebound);
        PERFORM bouncer_revenue_roll_up(p_project_id, v_tx);
        PERFORM bouncer_overview_roll_up(p_project_id, v_tx);
        PERFORM bouncer_finish_queue_add(p_project_id, v_tx);
        RETURN v_count;
    END IF;

    -- The batch: its first rows' transactions, whole, taken out of the log once (deleted first: nothing below reads
    -- the log, and the transaction commits all of it or none). Found by purchase_changes_xact_idx (0044), the
    -- batch's rows alone: by `xact = ANY (…)` under the primary key each of the three statements that read them
    -- walked the project's whole backlog, O(backlog x batches) through a drain.
    SELECT array_agg(DISTINCT c.xact) INTO v_xacts FROM (
        SELECT c1.xact FROM purchase_changes c1 WHERE c1.project_id = p_project_id ORDER BY c1.seq LIMIT p_limit) c;
    IF v_xacts IS NULL THEN
        RETURN 0;
    END IF;
    WITH consumed AS (
        DELETE FROM purchase_changes c WHERE c.project_id = p_project_id AND c.xact = ANY (v_xacts)
        RETURNING c.project_id, c.seq, c.xact, c.environment, c.original_transaction_id, c.data, c.created_at,
            c.purchase_before, c.purchase_after)
    -- Column by column, not `RETURNING c`: on Citus a whole row of a table is its shard's row type.
    SELECT array_agg(ROW(consumed.project_id, consumed.seq, consumed.xact, consumed.environment,
            consumed.original_transaction_id, consumed.data, consumed.created_at, consumed.purchase_before,
            consumed.purchase_after)::purchase_changes
        ORDER BY consumed.seq) INTO v_rows FROM consumed;
    -- The money facts of the batch's purchases first (revenue_transactions, schema/0062): its events show them.
    -- Its new consumables and non-consumables are queued for Finish Transaction (schema/0047).
    SELECT jsonb_agg(jsonb_build_object('environment', c.environment,
            'original_transaction_id', c.original_transaction_id, 'tx', c.data -> 'tx'))
    INTO v_tx
    FROM unnest(v_rows) c WHERE c.data ? 'tx';
    -- realized_ltv's customers after bindings moved (schema/0086), before the revenue roll-up (as above).
    PERFORM bouncer_revenue_ltv_rebind(p_project_id, (SELECT jsonb_agg(jsonb_build_object('environment', c.environment,
        'original_transaction_id', c.original_transaction_id)) FROM unnest(v_rows) c
        WHERE c.data ?| ARRAY['bound', 'revoked', 'ltv']));
    PERFORM bouncer_revenue_roll_up(p_project_id, v_tx);
    PERFORM bouncer_finish_queue_add(p_project_id, v_tx);

    FOR r IN
        WITH c AS MATERIALIZED (
            -- The rows, transaction by transaction (x: its first row), each one's rows in seq order; at: its now().
            -- changed: the row has the purchase before the call (schema/0097); was and became: the purchase before
            -- and after it as purchases rows, for the transition events; facts: after it, as the copy takes them.
            SELECT c.seq, c.environment, c.original_transaction_id, c.data AS d,
                min(c.seq) OVER w AS x, first_value(c.created_at) OVER (w ORDER BY c.seq) AS at,
                (c.purchase_before).latest_transaction_id IS NOT NULL AS changed,
                CASE WHEN (c.purchase_before).latest_transaction_id IS NOT NULL
                    THEN jsonb_populate_record(NULL::purchases, to_jsonb(c.purchase_before)
                    || jsonb_build_object('environment', c.environment,
                                          'original_transaction_id', c.original_transaction_id,
                                          'project_id', p_project_id)) END AS was,
                CASE WHEN (c.purchase_before).latest_transaction_id IS NOT NULL
                    THEN jsonb_populate_record(NULL::purchases, to_jsonb(c.purchase_after)
                    || jsonb_build_object('environment', c.environment,
                                          'original_transaction_id', c.original_transaction_id,
                                          'project_id', p_project_id)) END AS became,
                CASE WHEN (c.purchase_after).latest_transaction_id IS NOT NULL THEN to_jsonb(c.purchase_after) END
                    AS facts
            FROM unnest(v_rows) c
            WINDOW w AS (PARTITION BY c.xact)
        ), h AS (
            -- Each row's holders and revoked users, by user id.
            SELECT c.seq, u.user_id, u.k FROM c CROSS JOIN LATERAL (
                SELECT x.user_id, row_number() OVER (ORDER BY x.user_id COLLATE "C") AS k
                FROM jsonb_array_elements_text(COALESCE(c.d -> 'holders', '[]')) AS x(user_id)) u
        ), v AS (
            SELECT c.seq, u.user_id, u.k FROM c CROSS JOIN LATERAL (
                SELECT x.user_id, row_number() OVER (ORDER BY x.user_id COLLATE "C") AS k
                FROM jsonb_array_elements_text(COALESCE(c.d -> 'revoked', '[]')) AS x(user_id)) u
        ), announced AS (
            -- 0012's transaction trigger: a refund, for each holder (n 0); 0021's purchase trigger: a subscription's
            -- transition events for each holder (n 1-4).
            SELECT c.x, c.seq, 0 AS part, h.k, 0 AS n, h.user_id, 'transaction.refunded' AS type, jsonb_build_object(
                'environment', c.environment, 'transaction_id', c.d -> 'refund' ->> 'transaction_id',
                'original_transaction_id', c.original_transaction_id,
                'product_id', c.d -> 'refund' ->> 'product_id',
                'revocation_date', bouncer_webhook_time((c.d -> 'refund' ->> 'revocation_date')::timestamptz),
                'revocation_reason', c.d -> 'refund' -> 'revocation_reason',
                'revocation_type', c.d -> 'refund' -> 'revocation_type',
                'revocation_percentage', c.d -> 'refund' -> 'revocation_percentage')
                || bouncer_webhook_money(p_project_id, c.environment, c.d -> 'refund' ->> 'transaction_id') AS data
            FROM c JOIN h ON h.seq = c.seq
            WHERE c.d ? 'refund'
            UNION ALL
            SELECT c.x, c.seq, 1, h.k, t.n, h.user_id, t.type, t.data
            FROM c JOIN h ON h.seq = c.seq CROSS JOIN LATERAL (VALUES
                (1, 'subscription.renewed', CASE
                    WHEN (c.became).latest_transaction_id IS DISTINCT FROM (c.was).latest_transaction_id
                     AND (c.became).expires_date > COALESCE((c.was).expires_date, '-infinity')
                     AND (c.became).revocation_date IS NULL
                    THEN bouncer_webhook_purchase_data(c.became)
                        || bouncer_webhook_money(p_project_id, c.environment, (c.became).latest_transaction_id) END),
                (2, 'subscription.renewal_failed', CASE
                    WHEN (c.became).is_in_billing_retry AND NOT COALESCE((c.was).is_in_billing_retry, false)
                    THEN bouncer_webhook_purchase_data(c.became) END),
                (3, 'subscription.grace_period_started', CASE
                    WHEN (c.became).grace_period_expires_date IS NOT NULL
                     AND (c.became).grace_period_expires_date
                         > COALESCE((c.was).grace_period_expires_date, '-infinity')
                     AND (c.became).grace_period_expires_date > c.at
                    THEN bouncer_webhook_purchase_data(c.became) || jsonb_build_object('grace_period_expires_at',
                        bouncer_webhook_time((c.became).grace_period_expires_date)) END),
                (4, 'subscription.auto_renew_changed', CASE
                    WHEN COALESCE((c.became).auto_renew_status, 1)
                         IS DISTINCT FROM COALESCE((c.was).auto_renew_status, 1)
                    THEN bouncer_webhook_purchase_data(c.became)
                        || jsonb_build_object('auto_renew_product_id', (c.became).auto_renew_product_id) END)
                ) AS t(n, type, data)
            WHERE c.changed AND (c.became).type = 'Auto-Renewable Subscription' AND t.data IS NOT NULL
        ), s0 AS (
            -- What each row leaves for its transaction's commit, in order (part, then k): 'holders' (refresh the
            -- purchase's holders), 'facts' (the purchase's facts after the row), 'holds' / 'drops' (user_id holds
            -- the purchase after the row, or no longer), 'refresh' (user_id), 'transferred' (data: the event's).
            SELECT c.x, c.seq, 1 AS part, 0::bigint AS k, 'holders' AS kind, NULL::text AS user_id, c.environment,
                c.original_transaction_id, NULL::jsonb AS data
            FROM c WHERE c.changed
            UNION ALL
            SELECT c.x, c.seq, 2, 0, 'facts', NULL, c.environment, c.original_transaction_id, c.facts
            FROM c WHERE c.facts IS NOT NULL
            UNION ALL
            SELECT c.x, c.seq, 3, h.k, 'holds', h.user_id, c.environment, c.original_transaction_id, NULL
            FROM c JOIN h ON h.seq = c.seq
            UNION ALL
            SELECT c.x, c.seq, 4, v.k, 'drops', v.user_id, c.environment, c.original_transaction_id, NULL
            FROM c JOIN v ON v.seq = c.seq
            UNION ALL
            SELECT c.x, c.seq, 5, 0, 'holds', c.d ->> 'bound', c.environment, c.original_transaction_id, NULL
            FROM c WHERE c.d ? 'bound'
            UNION ALL
            SELECT c.x, c.seq, 6, v.k, 'refresh', v.user_id, NULL, NULL, NULL
            FROM c JOIN v ON v.seq = c.seq
            UNION ALL
            SELECT c.x, c.seq, 7, v.k, 'transferred', c.d ->> 'moved_to', NULL, NULL, jsonb_build_object(
                'environment', c.environment, 'original_transaction_id', c.original_transaction_id,
                'from_user_id', v.user_id, 'to_user_id', c.d ->> 'moved_to', 'policy', 'transfer')
            FROM c JOIN v ON v.seq = c.seq WHERE c.d ? 'moved_to'
            UNION ALL
            SELECT c.x, c.seq, 8, 0, 'refresh', c.d ->> 'bound', NULL, NULL, NULL
            FROM c WHERE c.d ? 'bound'
        ), s AS MATERIALIZED (
            SELECT s0.*, row_number() OVER (PARTITION BY s0.x ORDER BY s0.seq, s0.part, s0.k) AS ord FROM s0
        ), facts AS (
            SELECT DISTINCT ON (s.x, s.environment, s.original_transaction_id) s.x, s.environment,
                s.original_transaction_id, s.data
            FROM s WHERE s.kind = 'facts' ORDER BY s.x, s.environment, s.original_transaction_id, s.ord DESC
        ), held AS (
            SELECT DISTINCT ON (s.x, s.user_id, s.environment, s.original_transaction_id) s.x, s.user_id,
                s.environment, s.original_transaction_id, s.kind = 'holds' AS holds
            FROM s WHERE s.kind IN ('holds', 'drops')
            ORDER BY s.x, s.user_id, s.environment, s.original_transaction_id, s.ord DESC
        ), targets AS (
            -- Per transaction and user, what changed: purchases dropped, or held with new facts.
            SELECT h.x, h.user_id, jsonb_agg(jsonb_build_object('environment', h.environment,
                'original_transaction_id', h.original_transaction_id, 'holds', h.holds, 'facts', f.data)) AS targets
            FROM held h LEFT JOIN facts f ON f.x = h.x AND f.environment = h.environment
                AND f.original_transaction_id = h.original_transaction_id
            WHERE NOT h.holds OR f.data IS NOT NULL
            GROUP BY h.x, h.user_id
        ), effects AS (
            SELECT s.x, s.ord, ''::text AS sub, s.kind, s.user_id, s.data FROM s
            WHERE s.kind IN ('refresh', 'transferred')
            UNION ALL
            SELECT s.x, s.ord, h.user_id, 'refresh', h.user_id, NULL FROM s
            JOIN held h ON h.x = s.x AND h.environment = s.environment
                AND h.original_transaction_id = s.original_transaction_id
            WHERE s.kind = 'holders' AND h.holds
        ), stream AS (
            -- The batch in order: each transaction's announced events, then its commit's effects.
            SELECT a.x, 0 AS phase, a.seq AS o1, a.part AS o2, a.k * 8 + a.n AS o3, ''::text AS o4, 'event' AS kind,
                a.user_id, a.type, a.data, NULL::jsonb AS targets
            FROM announced a
            UNION ALL
            SELECT e.x, 1, e.ord, 0, 0::bigint, e.sub, CASE e.kind WHEN 'refresh' THEN 'refresh' ELSE 'event' END,
                e.user_id,
                CASE e.kind WHEN 'transferred' THEN 'purchase.transferred' END, e.data,
                CASE e.kind WHEN 'refresh' THEN COALESCE(t.targets, '[]') END
            FROM (SELECT e1.*, row_number() OVER (PARTITION BY e1.x, e1.kind, e1.user_id
                                                  ORDER BY e1.ord, e1.sub COLLATE "C") AS nth
                  FROM effects e1) e
            LEFT JOIN targets t ON t.x = e.x AND t.user_id = e.user_id AND e.kind = 'refresh'
            WHERE e.kind = 'transferred' OR e.nth = 1
        ), ordered AS (
            SELECT st.*, row_number() OVER (ORDER BY st.x, st.phase, st.o1, st.o2, st.o3, st.o4 COLLATE "C")
                AS pos
            FROM stream st
        )
        -- prior: the position of the user's previous refresh in the batch (a group must not hold both).
        SELECT o.pos, o.kind, o.user_id, o.type, o.data, o.targets, c.at,
            CASE o.kind WHEN 'refresh' THEN lag(o.pos) OVER (PARTITION BY o.kind, o.user_id ORDER BY o.pos) END
                AS prior
        FROM ordered o JOIN (SELECT DISTINCT c1.x, c1.at FROM c c1) c ON c.x = o.x
        ORDER BY o.pos
    LOOP
        -- A group ends when the kind changes, and a refresh group before a user it holds already.
        IF cardinality(v_users) > 0 AND (r.kind <> 'refresh' OR r.prior >= v_from) THEN
            PERFORM bouncer_webhook_refresh_users(p_project_id, v_ats, v_users, v_targets);
            v_users := '{}';
            v_ats := '{}';
            v_targets := '{}';
        END IF;
        IF cardinality(v_types) > 0 AND r.kind = 'refresh' THEN
            PERFORM bouncer_emit_events(p_project_id, v_event_users, v_types, v_data);
            v_event_users := '{}';
            v_types := '{}';
            v_data := '{}';
        END IF;
        IF r.kind = 'refresh' THEN
            IF cardinality(v_users) = 0 THEN
                v_from := r.pos;
            END IF;
            v_users := array_append(v_users, r.user_id);
            v_ats := array_append(v_ats, r.at);
            v_targets := array_append(v_targets, r.targets);
        ELSE
            v_event_users := array_append(v_event_users, r.user_id);
            v_types := array_append(v_types, r.type);
            v_data := array_append(v_data, r.data);
        END IF;
    END LOOP;
    IF cardinality(v_users) > 0 THEN
        PERFORM bouncer_webhook_refresh_users(p_project_id, v_ats, v_users, v_targets);
    END IF;
    IF cardinality(v_types) > 0 THEN
        PERFORM bouncer_emit_events(p_project_id, v_event_users, v_types, v_data);
    END IF;

    -- (Without the original ids: the overview needs none; the money facts were rolled up above.)
    SELECT count(*), jsonb_agg(jsonb_build_object('environment', c.environment, 'tx', c.data -> 'tx'))
        FILTER (WHERE c.data ? 'tx')
    INTO v_count, v_tx FROM unnest(v_rows) c;
    PERFORM bouncer_overview_roll_up(p_project_id, v_tx);
    RETURN v_count;
END;
$$;
