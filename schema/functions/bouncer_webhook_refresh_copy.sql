-- 0012's bouncer_webhook_refresh_user over the copy, at p_at: the user's purchases whose announced access ended by
-- p_at, and p_targets (a jsonb array of {environment, original_transaction_id, holds, facts}: the user now holds
-- the purchase with these facts, or no longer holds it), announced in 0012's order (subscription.started/expired by
-- purchase date), then the entitlements recomputed (entitlement.revoked, then entitlement.granted). With p_wait
-- false, a user whose lock another transaction holds is skipped (returns false): the sweep's way to share the work.
-- The events are gathered in order and written at the end in one bouncer_emit_events (one INSERT, one NOTIFY).
CREATE OR REPLACE FUNCTION bouncer_webhook_refresh_copy(p_project_id uuid, p_user_id text, p_at timestamptz, p_targets jsonb,
    p_wait boolean) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    v_state webhook_purchase_states;
    v_entitlements jsonb;
    v_reason text;
    v_types text[] := '{}';
    v_data jsonb[] := '{}';
BEGIN
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(16979, hashtext(p_project_id::text || '/' || p_user_id));
    ELSIF NOT pg_try_advisory_xact_lock(16979, hashtext(p_project_id::text || '/' || p_user_id)) THEN
        RETURN false;
    END IF;

    FOR r IN
        WITH target AS (
            SELECT x.environment, x.original_transaction_id, x.holds,
                CASE WHEN x.holds THEN bouncer_webhook_state(p_project_id, p_user_id, x.facts || jsonb_build_object(
                    'environment', x.environment, 'original_transaction_id', x.original_transaction_id), p_at)
                END AS state
            FROM jsonb_to_recordset(p_targets) AS x(environment text, original_transaction_id text, holds boolean,
                facts jsonb)
        ), ended AS (
            SELECT st.environment, st.original_transaction_id, true AS holds,
                bouncer_webhook_state(p_project_id, p_user_id, to_jsonb(st), p_at) AS state
            FROM webhook_purchase_states st
            WHERE st.project_id = p_project_id AND st.user_id = p_user_id AND st.status = 'active'
              AND st.access_ends_at <= p_at
              AND NOT EXISTS (SELECT 1 FROM target t WHERE t.environment = st.environment
                              AND t.original_transaction_id = st.original_transaction_id)
            ORDER BY st.access_ends_at  -- webhook_purchase_states_user_due_idx, whatever the statistics say
        )
        SELECT c.environment, c.original_transaction_id, c.holds, c.state, st.status AS old_status,
            st.project_id IS NOT NULL AS known
        FROM (SELECT * FROM target UNION ALL SELECT * FROM ended) c
        -- One probe per purchase by its key (OFFSET 0: not flattened into a join over all the user's states, which
        -- the statistics of before a burst of new rows would pick, as 0021 explains).
        LEFT JOIN LATERAL (SELECT st1.status, st1.project_id FROM webhook_purchase_states st1
            WHERE st1.project_id = p_project_id AND st1.user_id = p_user_id AND st1.environment = c.environment
              AND st1.original_transaction_id = c.original_transaction_id OFFSET 0) st ON true
        ORDER BY (c.state).purchase_date NULLS FIRST, c.original_transaction_id COLLATE "C", c.environment COLLATE "C"
    LOOP
        IF NOT r.holds THEN
            DELETE FROM webhook_purchase_states st
            WHERE st.project_id = p_project_id AND st.user_id = p_user_id AND st.environment = r.environment
              AND st.original_transaction_id = r.original_transaction_id;
            CONTINUE;
        END IF;
        v_state := r.state;
        IF v_state.type = 'Auto-Renewable Subscription' THEN
            IF NOT r.known AND v_state.status = 'active' THEN
                v_types := array_append(v_types, 'subscription.started'::text);
                v_data := array_append(v_data,
                    bouncer_webhook_purchase_data(jsonb_populate_record(NULL::purchases, to_jsonb(v_state))));
            ELSIF r.known AND r.old_status = 'active' AND v_state.status = 'expired' THEN
                v_types := array_append(v_types, 'subscription.expired'::text);
                v_data := array_append(v_data,
                    bouncer_webhook_purchase_data(jsonb_populate_record(NULL::purchases, to_jsonb(v_state)))
                    || jsonb_build_object('expired_at', bouncer_webhook_time(v_state.access_ends_at)));
            END IF;
        END IF;
        INSERT INTO webhook_purchase_states AS st SELECT v_state.*
        ON CONFLICT (project_id, user_id, environment, original_transaction_id) DO UPDATE SET
            status = EXCLUDED.status, access_ends_at = EXCLUDED.access_ends_at,
            latest_transaction_id = EXCLUDED.latest_transaction_id, product_id = EXCLUDED.product_id,
            type = EXCLUDED.type, purchase_date = EXCLUDED.purchase_date, expires_date = EXCLUDED.expires_date,
            grace_period_expires_date = EXCLUDED.grace_period_expires_date,
            revocation_date = EXCLUDED.revocation_date, revocation_reason = EXCLUDED.revocation_reason,
            revocation_type = EXCLUDED.revocation_type, auto_renew_status = EXCLUDED.auto_renew_status;
    END LOOP;

    SELECT COALESCE(jsonb_agg(to_jsonb(n)), '[]') INTO v_entitlements
    FROM bouncer_webhook_copy_entitlements(p_project_id, p_user_id) n;

    -- Gone: why the purchase that granted it no longer does.
    FOR r IN
        SELECT st.* FROM webhook_entitlement_states st
        WHERE st.project_id = p_project_id AND st.user_id = p_user_id
          AND NOT v_entitlements @> jsonb_build_array(jsonb_build_object('entitlement', st.entitlement))
        ORDER BY st.entitlement COLLATE "C"
    LOOP
        SELECT * INTO v_state FROM webhook_purchase_states st
        WHERE st.project_id = p_project_id AND st.user_id = p_user_id AND st.environment = r.environment
          AND st.original_transaction_id = r.original_transaction_id;
        IF NOT FOUND THEN
            v_reason := 'transferred';
        ELSIF v_state.revocation_date IS NOT NULL THEN
            v_reason := bouncer_revocation_kind(v_state.revocation_reason, v_state.revocation_type);
        ELSIF v_state.status = 'expired' THEN
            v_reason := 'expired';
        ELSE
            -- Still active but no longer mapped to the entitlement (a product mapping change).
            v_reason := 'revoked';
        END IF;
        v_types := array_append(v_types, 'entitlement.revoked'::text);
        v_data := array_append(v_data, jsonb_build_object(
            'entitlement', r.entitlement, 'reason', v_reason, 'environment', r.environment,
            'original_transaction_id', r.original_transaction_id, 'product_id', r.product_id));
        DELETE FROM webhook_entitlement_states st
        WHERE st.project_id = p_project_id AND st.user_id = p_user_id AND st.entitlement = r.entitlement;
    END LOOP;

    -- New, or granted by another purchase or until another instant (the latter announced by subscription events).
    FOR r IN
        SELECT n.*, st.entitlement IS NOT NULL AS known, st.environment AS old_environment,
               st.original_transaction_id AS old_original, st.expires_at AS old_expires
        FROM jsonb_to_recordset(v_entitlements) AS n(entitlement text, environment text,
            original_transaction_id text, product_id text, expires_at timestamptz)
        LEFT JOIN webhook_entitlement_states st ON st.project_id = p_project_id AND st.user_id = p_user_id
              AND st.entitlement = n.entitlement
        ORDER BY n.entitlement COLLATE "C"
    LOOP
        IF NOT r.known THEN
            v_types := array_append(v_types, 'entitlement.granted'::text);
            v_data := array_append(v_data, jsonb_build_object(
                'entitlement', r.entitlement, 'expires_at', bouncer_webhook_time(r.expires_at),
                'environment', r.environment, 'original_transaction_id', r.original_transaction_id,
                'product_id', r.product_id));
        END IF;
        IF NOT r.known OR r.old_environment IS DISTINCT FROM r.environment
           OR r.old_original IS DISTINCT FROM r.original_transaction_id
           OR r.old_expires IS DISTINCT FROM r.expires_at THEN
            INSERT INTO webhook_entitlement_states AS st (project_id, user_id, entitlement, environment,
                original_transaction_id, product_id, expires_at)
            VALUES (p_project_id, p_user_id, r.entitlement, r.environment, r.original_transaction_id, r.product_id,
                r.expires_at)
            ON CONFLICT (project_id, user_id, entitlement) DO UPDATE SET environment = EXCLUDED.environment,
                original_transaction_id = EXCLUDED.original_transaction_id, product_id = EXCLUDED.product_id,
                expires_at = EXCLUDED.expires_at;
        END IF;
    END LOOP;
    IF cardinality(v_types) > 0 THEN
        PERFORM bouncer_emit_events(p_project_id, p_user_id, v_types, v_data);
    END IF;
    RETURN true;
END;
$$;
