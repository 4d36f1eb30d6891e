-- 0012's bouncer_webhook_refresh_user over the copy for several users at once (p_user_ids[i] at p_ats[i] with
-- p_targets[i], each user once; the times may differ: a deriver's batch refreshes the users of several recording
-- transactions, each at its transaction's time): what bouncer_webhook_refresh_copy does for one user, in four
-- statements whatever the number of users. For each user: the purchases whose announced access ended by its time,
-- and its targets (a jsonb array of {environment, original_transaction_id, holds, facts}: the user now holds the
-- purchase with these facts, or no longer holds it), announced in 0012's order (subscription.started/expired by
-- purchase date), then the entitlements recomputed (entitlement.revoked, then entitlement.granted, each by
-- entitlement). The events are written in one bouncer_emit_events, user by user in array order. Takes the users'
-- locks (16979) in array order.
CREATE OR REPLACE FUNCTION bouncer_webhook_refresh_users(p_project_id uuid, p_ats timestamptz[], p_user_ids text[],
    p_targets jsonb[]) RETURNS void
-- Its statements are planned once per session: a custom plan for each call re-planned two large statements at every
-- call (planning is not in pg_stat_statements' execution times).
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_nths bigint[];
    v_ks bigint[];
    v_users text[];
    v_types text[];
    v_data jsonb[];
BEGIN
    -- Custom plans on Citus, as bouncer_derive_changes says.
    IF current_setting('citus.version', true) IS NOT NULL THEN
        PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
    END IF;
    PERFORM pg_advisory_xact_lock(16979, hashtext(p_project_id::text || '/' || u.user_id))
    FROM unnest(p_user_ids) WITH ORDINALITY AS u(user_id, nth) ORDER BY u.nth;

    -- The purchases: their events, and the copy moved to the users' new state (one snapshot: "known" is before).
    WITH u AS (
        SELECT u.user_id, u.at, COALESCE(u.targets, '[]') AS targets, u.nth
        FROM unnest(p_user_ids, p_ats, p_targets) WITH ORDINALITY AS u(user_id, at, targets, nth)
    ), target AS (
        SELECT u.user_id, u.nth, x.environment, x.original_transaction_id, x.holds,
            CASE WHEN x.holds THEN bouncer_webhook_state(p_project_id, u.user_id, x.facts || jsonb_build_object(
                'environment', x.environment, 'original_transaction_id', x.original_transaction_id), u.at)
            END AS state
        FROM u CROSS JOIN LATERAL jsonb_to_recordset(u.targets) AS x(environment text, original_transaction_id text,
            holds boolean, facts jsonb)
    ), ended AS (
        SELECT u.user_id, u.nth, st.environment, st.original_transaction_id, true AS holds,
            bouncer_webhook_state(p_project_id, u.user_id, to_jsonb(st), u.at) AS state
        FROM u CROSS JOIN LATERAL (
            SELECT st1.* FROM webhook_purchase_states st1
            WHERE st1.project_id = p_project_id AND st1.user_id = u.user_id AND st1.status = 'active'
              AND st1.access_ends_at <= u.at
              AND NOT EXISTS (SELECT 1 FROM target t WHERE t.nth = u.nth AND t.environment = st1.environment
                              AND t.original_transaction_id = st1.original_transaction_id)
            ORDER BY st1.access_ends_at  -- webhook_purchase_states_user_due_idx, whatever the statistics say
            ) st
    ), c AS (
        SELECT c.*, st.status AS old_status, st.project_id IS NOT NULL AS known
        FROM (SELECT * FROM target UNION ALL SELECT * FROM ended) c
        -- One probe per purchase by its key (OFFSET 0: not flattened into a join over all the user's states, which
        -- the statistics of before a burst of new rows would pick, as 0021 explains).
        LEFT JOIN LATERAL (SELECT st1.status, st1.project_id FROM webhook_purchase_states st1
            WHERE st1.project_id = p_project_id AND st1.user_id = c.user_id AND st1.environment = c.environment
              AND st1.original_transaction_id = c.original_transaction_id OFFSET 0) st ON true
    ), dropped AS (
        DELETE FROM webhook_purchase_states st USING c
        WHERE NOT c.holds AND st.project_id = p_project_id AND st.user_id = c.user_id
          AND st.environment = c.environment AND st.original_transaction_id = c.original_transaction_id
    ), kept AS (
        INSERT INTO webhook_purchase_states AS st SELECT (c.state).* FROM c WHERE c.holds
        ON CONFLICT (project_id, user_id, environment, original_transaction_id) DO UPDATE SET
            status = EXCLUDED.status, access_ends_at = EXCLUDED.access_ends_at,
            latest_transaction_id = EXCLUDED.latest_transaction_id, product_id = EXCLUDED.product_id,
            type = EXCLUDED.type, purchase_date = EXCLUDED.purchase_date, expires_date = EXCLUDED.expires_date,
            grace_period_expires_date = EXCLUDED.grace_period_expires_date,
            revocation_date = EXCLUDED.revocation_date, revocation_reason = EXCLUDED.revocation_reason,
            revocation_type = EXCLUDED.revocation_type, auto_renew_status = EXCLUDED.auto_renew_status,
            eligible_win_back_offer_ids = EXCLUDED.eligible_win_back_offer_ids
    )
    SELECT array_agg(e.nth), array_agg(e.k), array_agg(e.user_id), array_agg(e.type), array_agg(e.data)
    INTO v_nths, v_ks, v_users, v_types, v_data
    FROM (
        SELECT c.user_id, c.nth, c.holds, c.known, c.old_status, c.state,
            row_number() OVER (PARTITION BY c.nth ORDER BY (c.state).purchase_date NULLS FIRST,
                c.original_transaction_id COLLATE "C", c.environment COLLATE "C") AS k,
            CASE WHEN c.known THEN 'subscription.expired' ELSE 'subscription.started' END AS type,
            bouncer_webhook_purchase_data(jsonb_populate_record(NULL::purchases, to_jsonb(c.state)))
                || CASE WHEN c.known THEN jsonb_build_object('expired_at',
                       bouncer_webhook_time((c.state).access_ends_at))
                   ELSE bouncer_webhook_money(p_project_id, c.environment, (c.state).latest_transaction_id) END AS data
        FROM c
        WHERE c.holds AND (c.state).type = 'Auto-Renewable Subscription'
          AND ((NOT c.known AND (c.state).status = 'active')
               OR (c.known AND c.old_status = 'active' AND (c.state).status = 'expired'))) e;

    -- The entitlements under the current mapping, from the copy just written (a new statement: its snapshot sees
    -- it), against those announced (before this statement): gone (why: the purchase that granted it), new or changed.
    -- Then every event of the call, user by user: the purchases', the revoked, the granted.
    WITH u AS (
        SELECT u.user_id, u.nth FROM unnest(p_user_ids) WITH ORDINALITY AS u(user_id, nth)
    ), n AS (
        SELECT u.user_id, u.nth, n.entitlement, n.environment, n.original_transaction_id, n.product_id, n.expires_at
        FROM u CROSS JOIN LATERAL bouncer_webhook_copy_entitlements(p_project_id, u.user_id) n
    ), o AS (
        SELECT u.nth, st.user_id, st.entitlement, st.environment, st.original_transaction_id, st.product_id,
            st.expires_at
        FROM u JOIN webhook_entitlement_states st ON st.project_id = p_project_id AND st.user_id = u.user_id
    ), gone AS (
        SELECT o.*, CASE WHEN ps.project_id IS NULL THEN 'transferred'
                         WHEN ps.revocation_date IS NOT NULL
                             THEN bouncer_revocation_kind(ps.revocation_reason, ps.revocation_type)
                         WHEN ps.status = 'expired' THEN 'expired'
                         -- Still active but no longer mapped to the entitlement (a product mapping change).
                         ELSE 'revoked' END AS reason
        FROM o LEFT JOIN webhook_purchase_states ps ON ps.project_id = p_project_id AND ps.user_id = o.user_id
            AND ps.environment = o.environment AND ps.original_transaction_id = o.original_transaction_id
        WHERE NOT EXISTS (SELECT 1 FROM n WHERE n.nth = o.nth AND n.entitlement = o.entitlement)
    ), deleted AS (
        DELETE FROM webhook_entitlement_states st USING gone g
        WHERE st.project_id = p_project_id AND st.user_id = g.user_id AND st.entitlement = g.entitlement
    ), changed AS (
        -- New, or granted by another purchase or until another instant (the latter announced by subscription events).
        SELECT n.*, o.entitlement IS NOT NULL AS known
        FROM n LEFT JOIN o ON o.nth = n.nth AND o.entitlement = n.entitlement
        WHERE o.entitlement IS NULL OR o.environment IS DISTINCT FROM n.environment
           OR o.original_transaction_id IS DISTINCT FROM n.original_transaction_id
           OR o.expires_at IS DISTINCT FROM n.expires_at
    ), upserted AS (
        INSERT INTO webhook_entitlement_states AS st (project_id, user_id, entitlement, environment,
            original_transaction_id, product_id, expires_at)
        SELECT p_project_id, c.user_id, c.entitlement, c.environment, c.original_transaction_id, c.product_id,
            c.expires_at
        FROM changed c
        ON CONFLICT (project_id, user_id, entitlement) DO UPDATE SET environment = EXCLUDED.environment,
            original_transaction_id = EXCLUDED.original_transaction_id, product_id = EXCLUDED.product_id,
            expires_at = EXCLUDED.expires_at
    ), events AS (
        SELECT x.nth, 0 AS phase, x.k, x.user_id, x.type, x.data
        FROM unnest(v_nths, v_ks, v_users, v_types, v_data) AS x(nth, k, user_id, type, data)
        UNION ALL
        SELECT g.nth, 1, row_number() OVER (PARTITION BY g.nth ORDER BY g.entitlement COLLATE "C"), g.user_id,
            'entitlement.revoked', jsonb_build_object('entitlement', g.entitlement, 'reason', g.reason,
                'environment', g.environment, 'original_transaction_id', g.original_transaction_id,
                'product_id', g.product_id)
        FROM gone g
        UNION ALL
        SELECT c.nth, 2, row_number() OVER (PARTITION BY c.nth ORDER BY c.entitlement COLLATE "C"), c.user_id,
            'entitlement.granted', jsonb_build_object('entitlement', c.entitlement,
                'expires_at', bouncer_webhook_time(c.expires_at), 'environment', c.environment,
                'original_transaction_id', c.original_transaction_id, 'product_id', c.product_id)
        FROM changed c WHERE NOT c.known
    )
    SELECT array_agg(e.user_id ORDER BY e.nth, e.phase, e.k), array_agg(e.type ORDER BY e.nth, e.phase, e.k),
        array_agg(e.data ORDER BY e.nth, e.phase, e.k)
    INTO v_users, v_types, v_data
    FROM events e;
    IF cardinality(v_types) > 0 THEN
        PERFORM bouncer_emit_events(p_project_id, v_users, v_types, v_data);
    END IF;
END;
$$;
