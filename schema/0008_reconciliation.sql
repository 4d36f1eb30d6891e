-- 0008_reconciliation: what reconciliation (issue 13) needs, and the source of every written fact.
--
-- Reconciliation asks Apple (Get All Subscription Statuses, Get Transaction Info, Notification History) and applies
-- what it verifies through the same record functions as receipts and notifications, so the same rules decide
-- (newer signedDate wins, identities never change) and a notification recovered from history is deduplicated by
-- its notificationUUID exactly like a webhook redelivery. This file re-creates two of 0006's functions with one
-- more, defaulted, trailing parameter p_source, so every existing caller keeps working unchanged:
--   transactions.source   who wrote the facts now stored: receipt (POST /v1/receipts; the default), lookup (by
--                         transaction id), notification (the webhook), reconcile (reconciliation or a notification
--                         recovered from Notification History). NULL for rows written before 0008.
--   notifications.source  notification (delivered to the webhook) or reconcile (recovered from history).
-- bouncer_record_renewal is unchanged: renewal info lives on the purchase, and what reconciliation changed there
-- is in reconcile_changes.

ALTER TABLE transactions ADD COLUMN source text
    CHECK (source IN ('receipt', 'lookup', 'notification', 'reconcile'));
ALTER TABLE notifications ADD COLUMN source text NOT NULL DEFAULT 'notification'
    CHECK (source IN ('notification', 'reconcile'));

-- One row per reconciliation run of a project (scheduled, admin API or CLI). Runs of one project never overlap:
-- each holds a session advisory lock on the project for its whole duration (Storage: ReconciliationLock).
CREATE TABLE reconcile_runs (
    project_id             uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    id                     bigserial   NOT NULL,
    trigger                text        NOT NULL CHECK (trigger IN ('schedule', 'admin', 'cli')),
    started_at             timestamptz NOT NULL,
    finished_at            timestamptz,
    outcome                text        NOT NULL DEFAULT 'running'
                                       CHECK (outcome IN ('running', 'completed', 'partial', 'failed')),
    checked                int         NOT NULL DEFAULT 0,
    changed                int         NOT NULL DEFAULT 0,
    notifications_applied  int         NOT NULL DEFAULT 0,
    skipped                int         NOT NULL DEFAULT 0,
    apple_calls            int         NOT NULL DEFAULT 0,
    errors                 jsonb       NOT NULL DEFAULT '[]',
    instance               text        NOT NULL,
    PRIMARY KEY (project_id, id)
);
CREATE INDEX reconcile_runs_started_idx ON reconcile_runs (project_id, started_at DESC);

-- Every purchase a run changed: what it was and what it became, and how the run learned it (via).
CREATE TABLE reconcile_changes (
    project_id               uuid        NOT NULL,
    run_id                   bigint      NOT NULL,
    id                       bigserial   NOT NULL,
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    via                      text        NOT NULL
                                         CHECK (via IN ('subscription_status', 'transaction_info', 'notification_history')),
    source                   text        NOT NULL DEFAULT 'reconcile' CHECK (source = 'reconcile'),
    notification_uuid        uuid,
    notification_type        text,
    latest_transaction_id    text        NOT NULL,
    before_status            text,
    after_status             text        NOT NULL,
    before_expires_date      timestamptz,
    after_expires_date       timestamptz,
    before_revocation_date   timestamptz,
    after_revocation_date    timestamptz,
    at                       timestamptz NOT NULL,
    PRIMARY KEY (project_id, run_id, id),
    FOREIGN KEY (project_id, run_id) REFERENCES reconcile_runs (project_id, id) ON DELETE CASCADE
);
COMMENT ON COLUMN reconcile_changes.before_status IS 'NULL when the purchase was not known before the run';

-- When each purchase was last checked with Apple, so a run whose budget ends early continues with the purchases
-- checked longest ago next time.
CREATE TABLE reconcile_checks (
    project_id               uuid        NOT NULL,
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    checked_at               timestamptz NOT NULL,
    PRIMARY KEY (project_id, environment, original_transaction_id),
    FOREIGN KEY (project_id, environment, original_transaction_id)
        REFERENCES purchases (project_id, environment, original_transaction_id) ON DELETE CASCADE
);

-- Notification History catch-up: the end of the last history pass that read every page without a failure.
CREATE TABLE reconcile_cursors (
    project_id        uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    environment       text        NOT NULL,
    last_catch_up_at  timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    PRIMARY KEY (project_id, environment)
);

-- 0006's functions, re-created with p_source (see above); otherwise unchanged.
DROP FUNCTION bouncer_record_notification(uuid, uuid, text, text, text, text, timestamptz, jsonb, bigint, boolean,
    text, text, text, text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, int, uuid, text,
    timestamptz, jsonb, text, text, text, int, int, timestamptz, boolean, int, int, text, timestamptz, text,
    timestamptz, jsonb, timestamptz);
DROP FUNCTION bouncer_record_transaction(uuid, text, text, text, text, text, text, timestamptz, timestamptz,
    timestamptz, timestamptz, int, uuid, text, timestamptz, jsonb, text, text, text, timestamptz);

CREATE FUNCTION bouncer_record_transaction(
    p_project_id uuid, p_transaction_id text, p_original_transaction_id text, p_product_id text, p_type text,
    p_environment text, p_bundle_id text, p_purchase_date timestamptz, p_original_purchase_date timestamptz,
    p_expires_date timestamptz, p_revocation_date timestamptz, p_revocation_reason int, p_app_account_token uuid,
    p_ownership_type text, p_signed_date timestamptz, p_payload jsonb, p_user_id text, p_device_id text,
    p_transfer_policy text, p_now timestamptz, p_source text DEFAULT 'receipt')
RETURNS TABLE (purchase purchases, entitlements text[], ownership text, previous_owners text[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_purchase purchases;
    v_pending pending_renewals;
    v_stored transactions;
    v_differing text[] := '{}';
    v_newer boolean;
    v_owners text[] := '{}';
    v_owner text;
    v_decision text;
    v_previous text[];
BEGIN
    -- The transaction: facts refreshed only when signed later, last_seen_at always, first_seen_at never, and only
    -- while the stored identity (original transaction, product, bundle; the environment is in the key) is the
    -- signed one. Otherwise the DO UPDATE matches nothing and the call is refused.
    INSERT INTO transactions AS t (project_id, transaction_id, original_transaction_id, product_id, type, environment,
        bundle_id, purchase_date, original_purchase_date, expires_date, revocation_date, revocation_reason,
        app_account_token, ownership_type, signed_date, payload, first_seen_at, last_seen_at, source)
    VALUES (p_project_id, p_transaction_id, p_original_transaction_id, p_product_id, p_type, p_environment,
        p_bundle_id, p_purchase_date, p_original_purchase_date, p_expires_date, p_revocation_date,
        p_revocation_reason, p_app_account_token, p_ownership_type, p_signed_date, p_payload, p_now, p_now, p_source)
    ON CONFLICT (project_id, environment, transaction_id) DO UPDATE SET
        type = CASE WHEN EXCLUDED.signed_date > t.signed_date THEN EXCLUDED.type ELSE t.type END,
        purchase_date = CASE WHEN EXCLUDED.signed_date > t.signed_date
            THEN EXCLUDED.purchase_date ELSE t.purchase_date END,
        original_purchase_date = CASE WHEN EXCLUDED.signed_date > t.signed_date
            THEN EXCLUDED.original_purchase_date ELSE t.original_purchase_date END,
        expires_date = CASE WHEN EXCLUDED.signed_date > t.signed_date
            THEN EXCLUDED.expires_date ELSE t.expires_date END,
        revocation_date = CASE WHEN EXCLUDED.signed_date > t.signed_date
            THEN EXCLUDED.revocation_date ELSE t.revocation_date END,
        revocation_reason = CASE WHEN EXCLUDED.signed_date > t.signed_date
            THEN EXCLUDED.revocation_reason ELSE t.revocation_reason END,
        app_account_token = CASE WHEN EXCLUDED.signed_date > t.signed_date
            THEN EXCLUDED.app_account_token ELSE t.app_account_token END,
        ownership_type = CASE WHEN EXCLUDED.signed_date > t.signed_date
            THEN EXCLUDED.ownership_type ELSE t.ownership_type END,
        payload = CASE WHEN EXCLUDED.signed_date > t.signed_date THEN EXCLUDED.payload ELSE t.payload END,
        source = CASE WHEN EXCLUDED.signed_date > t.signed_date THEN EXCLUDED.source ELSE t.source END,
        signed_date = GREATEST(EXCLUDED.signed_date, t.signed_date),
        last_seen_at = GREATEST(EXCLUDED.last_seen_at, t.last_seen_at)
    WHERE t.original_transaction_id = EXCLUDED.original_transaction_id
      AND t.product_id = EXCLUDED.product_id AND t.bundle_id = EXCLUDED.bundle_id;
    IF NOT FOUND THEN
        -- The refused upsert left the stored row locked: name (for the log only) the fields that differ.
        SELECT * INTO v_stored FROM transactions
        WHERE project_id = p_project_id AND environment = p_environment AND transaction_id = p_transaction_id;
        IF v_stored.original_transaction_id IS DISTINCT FROM p_original_transaction_id THEN
            v_differing := v_differing || 'original_transaction_id'::text;
        END IF;
        IF v_stored.product_id IS DISTINCT FROM p_product_id THEN
            v_differing := v_differing || 'product_id'::text;
        END IF;
        IF v_stored.bundle_id IS DISTINCT FROM p_bundle_id THEN
            v_differing := v_differing || 'bundle_id'::text;
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'BRTC1', MESSAGE = 'transaction conflict',
            DETAIL = 'differing fields: '
                || COALESCE(NULLIF(array_to_string(v_differing, ', '), ''), 'unknown');
    END IF;

    -- The purchase: created from its first known transaction (a concurrent creator makes this wait for its commit,
    -- then do nothing). Its creator takes the hand-over lock and adopts renewal info that arrived first.
    INSERT INTO purchases (project_id, original_transaction_id, latest_transaction_id, product_id, type, environment,
        purchase_date, expires_date, revocation_date, revocation_reason, ownership_type, latest_signed_date,
        created_at, updated_at)
    VALUES (p_project_id, p_original_transaction_id, p_transaction_id, p_product_id, p_type, p_environment,
        p_purchase_date, p_expires_date, p_revocation_date, p_revocation_reason, p_ownership_type, p_signed_date,
        p_now, p_now)
    ON CONFLICT (project_id, environment, original_transaction_id) DO NOTHING;
    IF FOUND THEN
        PERFORM pg_advisory_xact_lock(16978,
            hashtext(p_project_id::text || '/' || p_environment || '/' || p_original_transaction_id));
        DELETE FROM pending_renewals r
        WHERE r.project_id = p_project_id AND r.environment = p_environment
          AND r.original_transaction_id = p_original_transaction_id
        RETURNING * INTO v_pending;
        IF FOUND THEN
            -- A new purchase has no renewal info: the pending one is always newer.
            UPDATE purchases SET auto_renew_status = v_pending.auto_renew_status,
                auto_renew_product_id = v_pending.auto_renew_product_id,
                expiration_intent = v_pending.expiration_intent,
                grace_period_expires_date = v_pending.grace_period_expires_date,
                is_in_billing_retry = v_pending.is_in_billing_retry,
                price_increase_status = v_pending.price_increase_status, offer_type = v_pending.offer_type,
                offer_identifier = v_pending.offer_identifier, renewal_signed_date = v_pending.signed_date,
                renewal_payload = v_pending.payload, renewal_product_id = v_pending.product_id,
                renewal_date = v_pending.renewal_date, renewal_environment = v_pending.environment,
                updated_at = p_now
            WHERE project_id = p_project_id AND environment = p_environment
              AND original_transaction_id = p_original_transaction_id;
        END IF;
    END IF;

    SELECT * INTO v_purchase FROM purchases p
    WHERE p.project_id = p_project_id AND p.environment = p_environment
      AND p.original_transaction_id = p_original_transaction_id
    FOR UPDATE;
    SELECT pr.entitlements INTO entitlements FROM products pr
    WHERE pr.project_id = p_project_id AND pr.product_id = p_product_id;
    entitlements := COALESCE(entitlements, '{}');

    -- Newer facts win (PurchaseState.isSuperseded): the same transaction only when signed later; another one when
    -- it starts later, then when signed later, then by the larger transaction id (bytewise, as Swift compares the
    -- ASCII ids), so every replica picks the same one.
    IF v_purchase.latest_transaction_id = p_transaction_id THEN
        v_newer := p_signed_date > v_purchase.latest_signed_date;
    ELSIF v_purchase.purchase_date IS DISTINCT FROM p_purchase_date THEN
        v_newer := v_purchase.purchase_date IS NULL OR p_purchase_date > v_purchase.purchase_date;
    ELSIF p_signed_date <> v_purchase.latest_signed_date THEN
        v_newer := p_signed_date > v_purchase.latest_signed_date;
    ELSE
        v_newer := p_transaction_id COLLATE "C" > v_purchase.latest_transaction_id COLLATE "C";
    END IF;
    IF v_newer THEN
        UPDATE purchases p SET latest_transaction_id = p_transaction_id, product_id = p_product_id, type = p_type,
            purchase_date = p_purchase_date, expires_date = p_expires_date, revocation_date = p_revocation_date,
            revocation_reason = p_revocation_reason, ownership_type = p_ownership_type,
            latest_signed_date = p_signed_date, updated_at = p_now
        WHERE p.project_id = p_project_id AND p.environment = p_environment
          AND p.original_transaction_id = p_original_transaction_id
        RETURNING * INTO v_purchase;
    END IF;

    IF p_user_id IS NOT NULL THEN
        -- The current holders, locked, in binding order (OwnershipRules.decide's currentOwners).
        FOR v_owner IN
            SELECT s.user_id FROM subscriptions s
            WHERE s.project_id = p_project_id AND s.environment = p_environment
              AND s.original_transaction_id = p_original_transaction_id AND s.revoked_at IS NULL
            ORDER BY s.bound_at, s.user_id COLLATE "C"
            FOR UPDATE
        LOOP
            v_owners := v_owners || v_owner;
        END LOOP;
        IF cardinality(v_owners) = 0 THEN
            v_decision := 'bind';
        ELSIF p_user_id = ANY (v_owners) THEN
            -- Under transfer, a user who holds it alongside others (bound under share) takes it over alone.
            IF p_transfer_policy = 'transfer' AND cardinality(v_owners) > 1 THEN
                v_decision := 'transfer';
                v_previous := array_remove(v_owners, p_user_id);
            ELSE
                v_decision := 'already_owned';
            END IF;
        ELSIF p_transfer_policy = 'transfer' THEN
            v_decision := 'transfer';
            v_previous := v_owners;
        ELSIF p_transfer_policy = 'share' THEN
            v_decision := 'share';
        ELSE
            RAISE EXCEPTION USING ERRCODE = 'BRPO1', MESSAGE = 'purchase owned by another user',
                DETAIL = 'policy ' || p_transfer_policy || ', owner ' || v_owners[1];
        END IF;

        IF v_decision = 'transfer' THEN
            WITH moved AS (
                UPDATE subscriptions s SET revoked_at = p_now, updated_at = p_now
                WHERE s.project_id = p_project_id AND s.environment = p_environment
                  AND s.original_transaction_id = p_original_transaction_id
                  AND s.user_id = ANY (v_previous) AND s.revoked_at IS NULL
                RETURNING s.user_id)
            INSERT INTO ownership_events (project_id, environment, original_transaction_id, from_user_id, to_user_id,
                policy, at)
            SELECT p_project_id, p_environment, p_original_transaction_id, moved.user_id, p_user_id, 'transfer', p_now
            FROM moved ORDER BY moved.user_id COLLATE "C";
        END IF;

        -- A new binding, a re-activated one (a user who had lost it to a transfer gets it back, with a new
        -- bound_at), or a touch of an active one (updated_at, and device_id when given).
        INSERT INTO subscriptions AS s (project_id, user_id, environment, original_transaction_id, device_id,
            bound_at, revoked_at, updated_at)
        VALUES (p_project_id, p_user_id, p_environment, p_original_transaction_id, p_device_id, p_now, NULL, p_now)
        ON CONFLICT (project_id, user_id, environment, original_transaction_id) DO UPDATE SET
            bound_at = CASE WHEN s.revoked_at IS NULL THEN s.bound_at ELSE EXCLUDED.bound_at END,
            revoked_at = NULL,
            device_id = COALESCE(EXCLUDED.device_id, s.device_id),
            updated_at = EXCLUDED.updated_at;
    END IF;

    purchase := v_purchase;
    ownership := v_decision;
    previous_owners := v_previous;
    RETURN NEXT;
END;
$$;

CREATE FUNCTION bouncer_record_notification(
    p_project_id uuid, p_notification_uuid uuid, p_type text, p_subtype text, p_original_transaction_id text,
    p_environment text, p_signed_date timestamptz, p_payload jsonb, p_trim_keep bigint, p_apply_facts boolean,
    t_transaction_id text, t_original_transaction_id text, t_product_id text, t_type text, t_environment text,
    t_bundle_id text, t_purchase_date timestamptz, t_original_purchase_date timestamptz, t_expires_date timestamptz,
    t_revocation_date timestamptz, t_revocation_reason int, t_app_account_token uuid, t_ownership_type text,
    t_signed_date timestamptz, t_payload jsonb,
    r_original_transaction_id text, r_product_id text, r_auto_renew_product_id text, r_auto_renew_status int,
    r_expiration_intent int, r_grace_period_expires_date timestamptz, r_is_in_billing_retry boolean,
    r_price_increase_status int, r_offer_type int, r_offer_identifier text, r_renewal_date timestamptz,
    r_environment text, r_signed_date timestamptz, r_payload jsonb,
    p_now timestamptz, p_source text DEFAULT 'notification')
RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    INSERT INTO notifications (project_id, notification_uuid, notification_type, subtype, original_transaction_id,
        environment, signed_date, payload, received_at, processed_at, source)
    VALUES (p_project_id, p_notification_uuid, p_type, p_subtype, p_original_transaction_id, p_environment,
        p_signed_date, p_payload, p_now, p_now, p_source)
    ON CONFLICT (project_id, environment, notification_uuid) DO NOTHING;
    IF NOT FOUND THEN
        RETURN 'duplicate';
    END IF;
    IF p_trim_keep IS NOT NULL THEN
        -- Both sides of the join go through the primary key's (project_id, environment) prefix, so this reads at
        -- most p_trim_keep + 1 rows and never the project's real notifications.
        DELETE FROM notifications n USING (
            SELECT o.environment, o.notification_uuid FROM notifications o
            WHERE o.project_id = p_project_id AND o.environment IN ('Xcode', 'LocalTesting')
            ORDER BY o.received_at DESC, o.notification_uuid DESC
            OFFSET p_trim_keep) old
        WHERE n.project_id = p_project_id AND n.environment IN ('Xcode', 'LocalTesting')
          AND n.environment = old.environment AND n.notification_uuid = old.notification_uuid;
    END IF;
    IF p_apply_facts THEN
        IF t_transaction_id IS NOT NULL THEN
            PERFORM 1 FROM bouncer_record_transaction(p_project_id, t_transaction_id, t_original_transaction_id,
                t_product_id, t_type, t_environment, t_bundle_id, t_purchase_date, t_original_purchase_date,
                t_expires_date, t_revocation_date, t_revocation_reason, t_app_account_token, t_ownership_type,
                t_signed_date, t_payload, NULL, NULL, 'transfer', p_now, p_source);
        END IF;
        IF r_signed_date IS NOT NULL THEN
            PERFORM 1 FROM bouncer_record_renewal(p_project_id, r_original_transaction_id, r_product_id,
                r_auto_renew_product_id, r_auto_renew_status, r_expiration_intent, r_grace_period_expires_date,
                r_is_in_billing_retry, r_price_increase_status, r_offer_type, r_offer_identifier, r_renewal_date,
                r_environment, r_signed_date, r_payload, p_now);
        END IF;
    END IF;
    RETURN 'processed';
END;
$$;
