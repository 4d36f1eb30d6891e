-- Derives the webhook events of the project's p_limit oldest log rows (NULL: all) and the rest of their
-- transactions (a transaction is replayed whole) and deletes the rows, in the caller's transaction; the number of
-- rows consumed. Returns 0 without waiting when another transaction is deriving the project, unless p_wait (erase:
-- everything before it must be derived first).
--
-- Each recording transaction is replayed as 0021's triggers ran in it, from its rows alone and the copy: per row
-- in seq order transaction.refunded and the transition events (the row's holders, its before/after facts); then
-- its deferred effects (bouncer_derive_commit). So a batch gives exactly the events of one derive per transaction.
-- With or without a webhook, the consumed rows' tx entries are added to overview_days (0035) as they are deleted.
CREATE OR REPLACE FUNCTION bouncer_derive_changes(p_project_id uuid, p_limit int, p_wait boolean DEFAULT false) RETURNS int
-- Its statements (and those of the functions it calls) are planned once per session: custom plans re-planned
-- the per-row statements at every call.
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    r record;
    d jsonb;
    v_xacts xid8[];
    v_xact xid8;
    v_at timestamptz;
    v_holders text[];
    v_revoked text[];
    v_user text;
    v_old purchases;
    v_new purchases;
    v_steps bouncer_derive_step[];
    v_count int := 0;
    v_tx jsonb;
BEGIN
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(16980, hashtext(p_project_id::text));
    ELSIF NOT pg_try_advisory_xact_lock(16980, hashtext(p_project_id::text)) THEN
        RETURN 0;
    END IF;
    -- A new statement after the lock: sees a webhook created (and seeded) by the lock's previous holder.
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = p_project_id) THEN
        WITH consumed AS (
            DELETE FROM purchase_changes c WHERE c.project_id = p_project_id AND c.seq IN (
                SELECT c1.seq FROM purchase_changes c1 WHERE c1.project_id = p_project_id ORDER BY c1.seq LIMIT p_limit)
            RETURNING c.environment, c.data -> 'tx' AS tx)
        SELECT count(*), jsonb_agg(jsonb_build_object('environment', environment, 'tx', tx)) FILTER (WHERE tx IS NOT NULL)
        INTO v_count, v_tx FROM consumed;
        PERFORM bouncer_overview_roll_up(p_project_id, v_tx);
        RETURN v_count;
    END IF;

    SELECT array_agg(DISTINCT c.xact) INTO v_xacts FROM (
        SELECT c1.xact FROM purchase_changes c1 WHERE c1.project_id = p_project_id ORDER BY c1.seq LIMIT p_limit) c;
    IF v_xacts IS NULL THEN
        RETURN 0;
    END IF;
    -- Transaction by transaction (by first row), each one's rows in seq order.
    FOR r IN
        SELECT c.*, min(c.seq) OVER (PARTITION BY c.xact) AS first_seq FROM purchase_changes c
        WHERE c.project_id = p_project_id AND c.xact = ANY (v_xacts)
        ORDER BY first_seq, c.seq
    LOOP
        IF v_xact IS DISTINCT FROM r.xact THEN
            IF v_xact IS NOT NULL THEN
                PERFORM bouncer_derive_commit(p_project_id, v_at, v_steps);
            END IF;
            v_xact := r.xact;
            v_at := r.created_at;
            v_steps := '{}';
        END IF;
        v_count := v_count + 1;
        d := r.data;
        SELECT COALESCE(array_agg(h ORDER BY h COLLATE "C"), '{}') INTO v_holders
        FROM jsonb_array_elements_text(COALESCE(d -> 'holders', '[]')) h;
        SELECT COALESCE(array_agg(h ORDER BY h COLLATE "C"), '{}') INTO v_revoked
        FROM jsonb_array_elements_text(COALESCE(d -> 'revoked', '[]')) h;

        -- 0012's transaction trigger: a refund, for each holder.
        IF d ? 'refund' THEN
            FOREACH v_user IN ARRAY v_holders LOOP
                PERFORM bouncer_emit_event(p_project_id, v_user, 'transaction.refunded', jsonb_build_object(
                    'environment', r.environment, 'transaction_id', d -> 'refund' ->> 'transaction_id',
                    'original_transaction_id', r.original_transaction_id,
                    'product_id', d -> 'refund' ->> 'product_id',
                    'revocation_date', bouncer_webhook_time((d -> 'refund' ->> 'revocation_date')::timestamptz),
                    'revocation_reason', d -> 'refund' -> 'revocation_reason',
                    'revocation_type', d -> 'refund' -> 'revocation_type',
                    'revocation_percentage', d -> 'refund' -> 'revocation_percentage'));
            END LOOP;
        END IF;

        -- 0021's purchase trigger: transition events for each holder; the holders' refresh at commit. "Now" is the
        -- transaction's.
        IF d ? 'old' THEN
            v_old := jsonb_populate_record(NULL::purchases, (d -> 'old') || jsonb_build_object(
                'environment', r.environment, 'original_transaction_id', r.original_transaction_id,
                'project_id', p_project_id));
            v_new := jsonb_populate_record(NULL::purchases, (d -> 'new') || jsonb_build_object(
                'environment', r.environment, 'original_transaction_id', r.original_transaction_id,
                'project_id', p_project_id));
            FOREACH v_user IN ARRAY CASE WHEN v_new.type = 'Auto-Renewable Subscription' THEN v_holders
                                         ELSE '{}'::text[] END LOOP
                PERFORM pg_advisory_xact_lock(16979, hashtext(p_project_id::text || '/' || v_user));
                IF v_new.latest_transaction_id IS DISTINCT FROM v_old.latest_transaction_id
                   AND v_new.expires_date > COALESCE(v_old.expires_date, '-infinity') AND v_new.revocation_date IS NULL THEN
                    PERFORM bouncer_emit_event(p_project_id, v_user, 'subscription.renewed',
                        bouncer_webhook_purchase_data(v_new));
                END IF;
                IF v_new.is_in_billing_retry AND NOT COALESCE(v_old.is_in_billing_retry, false) THEN
                    PERFORM bouncer_emit_event(p_project_id, v_user, 'subscription.renewal_failed',
                        bouncer_webhook_purchase_data(v_new));
                END IF;
                IF v_new.grace_period_expires_date IS NOT NULL
                   AND v_new.grace_period_expires_date > COALESCE(v_old.grace_period_expires_date, '-infinity')
                   AND v_new.grace_period_expires_date > v_at THEN
                    PERFORM bouncer_emit_event(p_project_id, v_user, 'subscription.grace_period_started',
                        bouncer_webhook_purchase_data(v_new) || jsonb_build_object('grace_period_expires_at',
                            bouncer_webhook_time(v_new.grace_period_expires_date)));
                END IF;
                IF COALESCE(v_new.auto_renew_status, 1) IS DISTINCT FROM COALESCE(v_old.auto_renew_status, 1) THEN
                    PERFORM bouncer_emit_event(p_project_id, v_user, 'subscription.auto_renew_changed',
                        bouncer_webhook_purchase_data(v_new)
                        || jsonb_build_object('auto_renew_product_id', v_new.auto_renew_product_id));
                END IF;
            END LOOP;
            v_steps := array_append(v_steps, ('holders', NULL, r.environment, r.original_transaction_id, NULL)
                ::bouncer_derive_step);
        END IF;

        -- The state at the transaction's end; the deferred effects: the revoked users' refresh (entitlement.revoked
        -- "transferred"), purchase.transferred, the bound user's refresh. (array_append in place: linear.)
        IF d ? 'new' THEN
            v_steps := array_append(v_steps, ('facts', NULL, r.environment, r.original_transaction_id, d -> 'new')
                ::bouncer_derive_step);
        END IF;
        FOREACH v_user IN ARRAY v_holders LOOP
            v_steps := array_append(v_steps, ('holds', v_user, r.environment, r.original_transaction_id, NULL)
                ::bouncer_derive_step);
        END LOOP;
        FOREACH v_user IN ARRAY v_revoked LOOP
            v_steps := array_append(v_steps, ('drops', v_user, r.environment, r.original_transaction_id, NULL)
                ::bouncer_derive_step);
        END LOOP;
        IF d ? 'bound' THEN
            v_steps := array_append(v_steps, ('holds', d ->> 'bound', r.environment, r.original_transaction_id, NULL)
                ::bouncer_derive_step);
        END IF;
        FOREACH v_user IN ARRAY v_revoked LOOP
            v_steps := array_append(v_steps, ('refresh', v_user, NULL, NULL, NULL)::bouncer_derive_step);
        END LOOP;
        IF d ? 'moved_to' THEN
            FOREACH v_user IN ARRAY v_revoked LOOP
                v_steps := array_append(v_steps, ('transferred', d ->> 'moved_to', NULL, NULL, jsonb_build_object(
                    'environment', r.environment, 'original_transaction_id', r.original_transaction_id,
                    'from_user_id', v_user, 'to_user_id', d ->> 'moved_to', 'policy', 'transfer'))::bouncer_derive_step);
            END LOOP;
        END IF;
        IF d ? 'bound' THEN
            v_steps := array_append(v_steps, ('refresh', d ->> 'bound', NULL, NULL, NULL)::bouncer_derive_step);
        END IF;
    END LOOP;
    IF v_xact IS NOT NULL THEN
        PERFORM bouncer_derive_commit(p_project_id, v_at, v_steps);
    END IF;
    WITH consumed AS (
        DELETE FROM purchase_changes c WHERE c.project_id = p_project_id AND c.xact = ANY (v_xacts)
        RETURNING c.environment, c.data -> 'tx' AS tx)
    SELECT jsonb_agg(jsonb_build_object('environment', environment, 'tx', tx)) FILTER (WHERE tx IS NOT NULL)
    INTO v_tx FROM consumed;
    PERFORM bouncer_overview_roll_up(p_project_id, v_tx);
    RETURN v_count;
END;
$$;
