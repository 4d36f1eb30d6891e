-- 0025_purchase_changes: the receipt's transaction records facts and appends them to a log; webhook events are
-- derived from the log afterwards, by a job (issue 22, item 1). Supersedes 0012's triggers and 0021's commit-time
-- refresh.
--
-- Until now webhook events were computed by TRIGGERS on subscriptions, purchases, transactions and ownership_events,
-- inside the receipt's transaction: per holder a user advisory lock, transition events, and a refresh that read the
-- user's whole holdings and diffed them against webhook_purchase_states / webhook_entitlement_states — kept for every
-- project, webhook or not. Now:
--
--   purchase_changes   one row per record call that changed a purchase (the facts webhook events compare), its
--                      bindings, or revoked one of its transactions: appended by bouncer_record_transaction and
--                      bouncer_record_renewal (and bouncer_canonical_user_ids) while they hold the purchase's row
--                      lock, so the rows of one purchase are numbered (seq) in commit order; xact names the
--                      recording transaction, created_at is its now(). No trigger, no read of the user's other
--                      holdings: the row carries what the derived effects need (data, below).
--   bouncer_derive_changes(project, limit)
--                      the deriver, called by the webhook deriver job of every `bouncer serve` after a commit and
--                      every 250 ms. One deriver per project at a time (advisory lock 16980), in ONE transaction:
--                      it takes the oldest rows (whole recording transactions), writes their events to
--                      webhook_events exactly as 0021's triggers did in that transaction (same types, same data,
--                      same order, per-user order under the user's lock 16979) and deletes them. A kill -9
--                      anywhere leaves either the rows (derived again later) or the events: exactly once.
--                      A project without a webhook has its rows deleted and nothing else: no webhook_* rows at all.
--   bouncer_webhook_seed(project)
--                      run when a project's webhook is created, in that transaction: what is held now becomes what
--                      was announced (old grants are not replayed), and the project's pending log rows, already
--                      reflected in that state, are consumed.
--
-- purchase_changes.data (keys absent when empty):
--   old        the purchase before the call (bouncer_change_snapshot), when one of the columns the transition
--              events compare changed; absent for a purchase the call created (it had no holders)
--   new        the purchase after the call: with old, and whenever the call bound a user
--   holders    the users holding the purchase before the call (transition and refund events go to them)
--   refund     the call's transaction newly refunded: its id, product and revocation fields
--   revoked    users whose binding the call revoked (a transfer, or another spelling of a canonical user id)
--   moved_to   the user a transfer moved the purchase to (purchase.transferred, from each revoked user)
--   bound      the user the call bound (a new or re-activated binding)
--
-- Replay, not a diff of the live tables: the subscription and entitlement events (a user's "refresh") are computed
-- from the deriver's own copy of what was announced, webhook_purchase_states (now with each purchase's facts) and
-- webhook_entitlement_states, to which each transaction's rows apply their facts, plus the current product mapping;
-- status is taken at the transaction's now(). So a batch of rows announces exactly what one derive per recording
-- transaction would, whenever it runs: a purchase refunded before the deriver ran is still announced as started and
-- granted, then refunded and revoked. A transaction's events come in 0021's order: per row, transaction.refunded
-- and the transition events per holder; then, as at its commit, per row the refresh of the purchase's holders (at
-- the end), the revoked users' refresh (entitlement.revoked "transferred"), purchase.transferred, the bound user's refresh, each user refreshed
-- once with the transaction's final state. Expiry by time is the sweep's, over the same copy (bouncer_webhook_sweep);
-- it waits for rows older than the expiry. Webhook latency is "shortly after commit" (the deriver wakes on the
-- instance's own writes; others' within 250 ms).

-- The log. No foreign key: an append checks nothing (a deleted project's rows are consumed like any others).
CREATE TABLE purchase_changes (
    project_id               uuid        NOT NULL,
    seq                      bigserial   NOT NULL,
    xact                     xid8        NOT NULL DEFAULT pg_current_xact_id(),
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    data                     jsonb       NOT NULL,
    created_at               timestamptz NOT NULL,
    PRIMARY KEY (project_id, seq)
);

-- What a purchase's webhook events compare and show, and its status needs (the columns of
-- webhook_purchase_states, minus the key): the purchase's facts, and the revocation type of its latest transaction
-- when revoked (a refund or a revocation: entitlement.revoked's reason).
CREATE FUNCTION bouncer_change_snapshot(p purchases) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('latest_transaction_id', p.latest_transaction_id, 'product_id', p.product_id,
        'type', p.type, 'purchase_date', p.purchase_date, 'expires_date', p.expires_date,
        'revocation_date', p.revocation_date, 'revocation_reason', p.revocation_reason,
        'revocation_type', CASE WHEN p.revocation_date IS NOT NULL THEN (SELECT t.revocation_type FROM transactions t
            WHERE t.project_id = p.project_id AND t.environment = p.environment
              AND t.transaction_id = p.latest_transaction_id) END,
        'grace_period_expires_date', p.grace_period_expires_date, 'is_in_billing_retry', p.is_in_billing_retry,
        'auto_renew_status', p.auto_renew_status, 'auto_renew_product_id', p.auto_renew_product_id)
$$;

-- The columns whose change 0012's purchase trigger reacted to.
CREATE FUNCTION bouncer_purchase_changed(a purchases, b purchases) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT a.latest_transaction_id IS DISTINCT FROM b.latest_transaction_id
        OR a.expires_date IS DISTINCT FROM b.expires_date
        OR a.revocation_date IS DISTINCT FROM b.revocation_date
        OR a.product_id IS DISTINCT FROM b.product_id
        OR a.grace_period_expires_date IS DISTINCT FROM b.grace_period_expires_date
        OR a.is_in_billing_retry IS DISTINCT FROM b.is_in_billing_retry
        OR a.auto_renew_status IS DISTINCT FROM b.auto_renew_status
$$;

-- The users holding a purchase (an index probe of subscriptions_original_idx), for calls that did not lock them.
CREATE FUNCTION bouncer_purchase_holders(p_project_id uuid, p_environment text, p_original_transaction_id text)
RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(array_agg(s.user_id ORDER BY s.user_id COLLATE "C"), '{}') FROM subscriptions s
    WHERE s.project_id = p_project_id AND s.environment = p_environment
      AND s.original_transaction_id = p_original_transaction_id AND s.revoked_at IS NULL
$$;

-- Appends one log row (see data above) unless the call changed nothing a derived effect reads.
CREATE FUNCTION bouncer_append_change(p_project_id uuid, p_environment text, p_original_transaction_id text,
    p_old purchases, p_new purchases, p_holders text[], p_refund jsonb, p_revoked text[], p_moved_to text,
    p_bound text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_changed boolean := p_old.original_transaction_id IS NOT NULL AND bouncer_purchase_changed(p_old, p_new);
BEGIN
    IF NOT v_changed AND p_refund IS NULL AND p_bound IS NULL AND COALESCE(cardinality(p_revoked), 0) = 0 THEN
        RETURN;
    END IF;
    IF p_holders IS NULL AND (v_changed OR p_refund IS NOT NULL) THEN
        p_holders := bouncer_purchase_holders(p_project_id, p_environment, p_original_transaction_id);
    END IF;
    INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
    VALUES (p_project_id, p_environment, p_original_transaction_id, jsonb_strip_nulls(jsonb_build_object(
        'old', CASE WHEN v_changed THEN bouncer_change_snapshot(p_old) END,
        'new', CASE WHEN v_changed OR p_bound IS NOT NULL THEN bouncer_change_snapshot(p_new) END,
        'holders', CASE WHEN cardinality(p_holders) > 0 THEN to_jsonb(p_holders) END,
        'refund', p_refund,
        'revoked', CASE WHEN cardinality(p_revoked) > 0 THEN to_jsonb(p_revoked) END,
        'moved_to', p_moved_to, 'bound', p_bound)), now());
END;
$$;

-- 0008's bouncer_record_transaction, appending its change to the log (the lines marked "log"); otherwise unchanged.
CREATE OR REPLACE FUNCTION bouncer_record_transaction(
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
    v_created boolean;
    v_old purchases;                -- log: the purchase before this call (NULL when the call created it)
    v_had_row boolean := false;     -- log: the transaction was stored before this call …
    v_old_revocation timestamptz;   -- log: … with this revocation date
    v_inserted boolean;
    v_revocation timestamptz;
    v_revocation_reason int;
    v_revocation_type text;
    v_revocation_percentage bigint;
    v_refund jsonb;
BEGIN
    -- log: a revocation can only appear when this call carries one; then the stored one is read (and locked) first.
    IF p_revocation_date IS NOT NULL THEN
        SELECT true, t.revocation_date INTO v_had_row, v_old_revocation FROM transactions t
        WHERE t.project_id = p_project_id AND t.environment = p_environment AND t.transaction_id = p_transaction_id
        FOR UPDATE;
        v_had_row := COALESCE(v_had_row, false);
    END IF;

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
      AND t.product_id = EXCLUDED.product_id AND t.bundle_id = EXCLUDED.bundle_id
    RETURNING (t.xmax = 0), t.revocation_date, t.revocation_reason, t.revocation_type, t.revocation_percentage
    INTO v_inserted, v_revocation, v_revocation_reason, v_revocation_type, v_revocation_percentage;
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
    v_created := FOUND;
    IF v_created THEN
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
    IF NOT v_created THEN
        v_old := v_purchase;
    END IF;
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

    -- log: a refund newly recorded (a revocation that is not a Family Sharing revoke), then the change.
    IF v_revocation IS NOT NULL AND (v_inserted OR (v_had_row AND v_old_revocation IS NULL))
       AND bouncer_revocation_kind(v_revocation_reason, v_revocation_type) = 'refunded' THEN
        v_refund := jsonb_build_object('transaction_id', p_transaction_id, 'product_id', p_product_id,
            'revocation_date', v_revocation, 'revocation_reason', v_revocation_reason,
            'revocation_type', v_revocation_type, 'revocation_percentage', v_revocation_percentage);
    END IF;
    PERFORM bouncer_append_change(p_project_id, p_environment, p_original_transaction_id, v_old, v_purchase,
        CASE WHEN p_user_id IS NOT NULL THEN v_owners END, v_refund,
        CASE WHEN v_decision = 'transfer' THEN v_previous END,
        CASE WHEN v_decision = 'transfer' THEN p_user_id END,
        CASE WHEN p_user_id IS NOT NULL AND NOT (p_user_id = ANY (v_owners)) THEN p_user_id END);

    purchase := v_purchase;
    ownership := v_decision;
    previous_owners := v_previous;
    RETURN NEXT;
END;
$$;

-- 0006's bouncer_record_renewal, appending its change to the log; otherwise unchanged.
CREATE OR REPLACE FUNCTION bouncer_record_renewal(
    p_project_id uuid, p_original_transaction_id text, p_product_id text, p_auto_renew_product_id text,
    p_auto_renew_status int, p_expiration_intent int, p_grace_period_expires_date timestamptz,
    p_is_in_billing_retry boolean, p_price_increase_status int, p_offer_type int, p_offer_identifier text,
    p_renewal_date timestamptz, p_environment text, p_signed_date timestamptz, p_payload jsonb, p_now timestamptz)
RETURNS TABLE (outcome text, purchase purchases)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_purchase purchases;
    v_old purchases;
BEGIN
    SELECT * INTO v_purchase FROM purchases p
    WHERE p.project_id = p_project_id AND p.environment = p_environment
      AND p.original_transaction_id = p_original_transaction_id
    FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM pg_advisory_xact_lock(16978,
            hashtext(p_project_id::text || '/' || p_environment || '/' || p_original_transaction_id));
        -- A new statement: it sees whatever the purchase's creator committed before we got the lock.
        SELECT * INTO v_purchase FROM purchases p
        WHERE p.project_id = p_project_id AND p.environment = p_environment
          AND p.original_transaction_id = p_original_transaction_id
        FOR UPDATE;
        IF NOT FOUND THEN
            INSERT INTO pending_renewals AS r (project_id, original_transaction_id, product_id, auto_renew_product_id,
                auto_renew_status, expiration_intent, grace_period_expires_date, is_in_billing_retry,
                price_increase_status, offer_type, offer_identifier, renewal_date, environment, signed_date, payload,
                received_at)
            VALUES (p_project_id, p_original_transaction_id, p_product_id, p_auto_renew_product_id,
                p_auto_renew_status, p_expiration_intent, p_grace_period_expires_date, p_is_in_billing_retry,
                p_price_increase_status, p_offer_type, p_offer_identifier, p_renewal_date, p_environment,
                p_signed_date, p_payload, p_now)
            ON CONFLICT (project_id, environment, original_transaction_id) DO UPDATE SET
                product_id = EXCLUDED.product_id, auto_renew_product_id = EXCLUDED.auto_renew_product_id,
                auto_renew_status = EXCLUDED.auto_renew_status, expiration_intent = EXCLUDED.expiration_intent,
                grace_period_expires_date = EXCLUDED.grace_period_expires_date,
                is_in_billing_retry = EXCLUDED.is_in_billing_retry,
                price_increase_status = EXCLUDED.price_increase_status, offer_type = EXCLUDED.offer_type,
                offer_identifier = EXCLUDED.offer_identifier, renewal_date = EXCLUDED.renewal_date,
                signed_date = EXCLUDED.signed_date, payload = EXCLUDED.payload,
                received_at = EXCLUDED.received_at
            WHERE r.signed_date < EXCLUDED.signed_date;
            outcome := 'pending';
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;

    -- Newer renewal info wins (PurchaseState.applying(RenewalFacts)).
    IF v_purchase.renewal_signed_date IS NOT NULL AND p_signed_date <= v_purchase.renewal_signed_date THEN
        outcome := 'unchanged';
        purchase := v_purchase;
        RETURN NEXT;
        RETURN;
    END IF;
    v_old := v_purchase;
    UPDATE purchases p SET auto_renew_status = p_auto_renew_status, auto_renew_product_id = p_auto_renew_product_id,
        expiration_intent = p_expiration_intent, grace_period_expires_date = p_grace_period_expires_date,
        is_in_billing_retry = p_is_in_billing_retry, price_increase_status = p_price_increase_status,
        offer_type = p_offer_type, offer_identifier = p_offer_identifier, renewal_signed_date = p_signed_date,
        renewal_payload = p_payload, renewal_product_id = p_product_id, renewal_date = p_renewal_date,
        renewal_environment = p_environment, updated_at = p_now
    WHERE p.project_id = p_project_id AND p.environment = p_environment
      AND p.original_transaction_id = p_original_transaction_id
    RETURNING * INTO v_purchase;
    PERFORM bouncer_append_change(p_project_id, p_environment, p_original_transaction_id, v_old, v_purchase,
        NULL, NULL, NULL, NULL, NULL);  -- log
    outcome := 'applied';
    purchase := v_purchase;
    RETURN NEXT;
END;
$$;

-- 0020's bouncer_canonical_user_ids, appending each moved binding to the log (the subscription triggers it relied on
-- are gone); otherwise unchanged.
CREATE OR REPLACE FUNCTION bouncer_canonical_user_ids(p_project_id uuid, p_now timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    -- The hyphenated form Foundation's UUID(uuidString:) accepts, in any letter case.
    v_uuid constant text := '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';
BEGIN
    -- log: the other spelling loses the binding (not a transfer: no purchase.transferred), the canonical id holds it.
    INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
    SELECT o.project_id, o.environment, o.original_transaction_id, jsonb_build_object('revoked',
        jsonb_build_array(o.user_id), 'bound', lower(o.user_id), 'new', bouncer_change_snapshot(p)), now()
    FROM subscriptions o
    JOIN purchases p ON p.project_id = o.project_id AND p.environment = o.environment
                    AND p.original_transaction_id = o.original_transaction_id
    WHERE o.project_id = p_project_id AND o.revoked_at IS NULL AND o.user_id ~ v_uuid AND o.user_id <> lower(o.user_id)
    ORDER BY o.bound_at, o.user_id COLLATE "C";
    -- A live binding under another spelling moves to the canonical id: the canonical row is bound (or re-activated),
    -- then the other spelling's revoked. DISTINCT ON: two other spellings of one UUID holding one purchase make one
    -- canonical row.
    INSERT INTO subscriptions AS s (project_id, user_id, environment, original_transaction_id, device_id,
        bound_at, revoked_at, updated_at)
    SELECT DISTINCT ON (lower(o.user_id), o.environment, o.original_transaction_id)
        o.project_id, lower(o.user_id), o.environment, o.original_transaction_id, o.device_id, o.bound_at, NULL, p_now
    FROM subscriptions o
    WHERE o.project_id = p_project_id AND o.revoked_at IS NULL AND o.user_id ~ v_uuid AND o.user_id <> lower(o.user_id)
    ORDER BY lower(o.user_id), o.environment, o.original_transaction_id, o.bound_at
    ON CONFLICT (project_id, user_id, environment, original_transaction_id) DO UPDATE SET
        bound_at = CASE WHEN s.revoked_at IS NULL THEN s.bound_at ELSE EXCLUDED.bound_at END,
        revoked_at = NULL,
        device_id = COALESCE(s.device_id, EXCLUDED.device_id),
        updated_at = EXCLUDED.updated_at;
    UPDATE subscriptions SET revoked_at = p_now, updated_at = p_now
    WHERE project_id = p_project_id AND revoked_at IS NULL AND user_id ~ v_uuid AND user_id <> lower(user_id);

    -- App transactions and grants are keyed by their own ids: the user id is an attribute, rewritten in place.
    UPDATE app_transactions SET user_id = lower(user_id)
    WHERE project_id = p_project_id AND user_id ~ v_uuid AND user_id <> lower(user_id);
    UPDATE grants SET user_id = lower(user_id)
    WHERE project_id = p_project_id AND user_id ~ v_uuid AND user_id <> lower(user_id);
END;
$$;

-- The announced copy carries the facts of each purchase it announced, so the deriver and the sweep compute from it
-- and from the current product mapping, never from the live tables: a log row has the same effect whenever it is
-- derived. Filled from the log rows' facts (and by bouncer_webhook_seed); existing rows at the end of this file.
ALTER TABLE webhook_purchase_states
    ADD COLUMN latest_transaction_id text, ADD COLUMN product_id text, ADD COLUMN type text,
    ADD COLUMN purchase_date timestamptz, ADD COLUMN expires_date timestamptz,
    ADD COLUMN grace_period_expires_date timestamptz, ADD COLUMN revocation_date timestamptz,
    ADD COLUMN revocation_reason int, ADD COLUMN revocation_type text, ADD COLUMN auto_renew_status int;
-- A user's entitlements: per product held, the active purchase whose access lasts longest (one probe per product,
-- whatever the number of purchases: a forged receipt's thousands of one product cost one).
CREATE INDEX webhook_purchase_states_held_idx ON webhook_purchase_states (project_id, user_id, product_id,
    access_ends_at DESC NULLS FIRST, original_transaction_id COLLATE "C", environment COLLATE "C")
    WHERE status = 'active';
-- A user's announced-active purchases whose access has ended by an instant.
CREATE INDEX webhook_purchase_states_user_due_idx ON webhook_purchase_states (project_id, user_id, access_ends_at)
    WHERE status = 'active';

-- The copy's row for a user holding a purchase with these facts (bouncer_change_snapshot plus environment and
-- original_transaction_id), with its status at p_at.
CREATE FUNCTION bouncer_webhook_state(p_project_id uuid, p_user_id text, p_facts jsonb, p_at timestamptz)
RETURNS webhook_purchase_states
LANGUAGE sql STABLE AS $$
    SELECT jsonb_populate_record(NULL::webhook_purchase_states, p_facts || jsonb_build_object(
        'project_id', p_project_id, 'user_id', p_user_id, 'status', bouncer_purchase_status(f, p_at),
        'access_ends_at', bouncer_purchase_access_end(f)))
    FROM jsonb_populate_record(NULL::purchases, p_facts || jsonb_build_object('project_id', p_project_id)) f
$$;

-- 0012's bouncer_webhook_user_entitlements over the copy: the entitlements of the user's announced-active
-- purchases under the current product mapping, each with the purchase whose access lasts longest (NULL: forever;
-- ties by original transaction id, then environment). The products held are found by skipping through
-- webhook_purchase_states_held_idx (a loose index scan), then each one's best purchase is its first entry.
CREATE FUNCTION bouncer_webhook_copy_entitlements(p_project_id uuid, p_user_id text)
RETURNS TABLE (entitlement text, environment text, original_transaction_id text, product_id text,
    expires_at timestamptz)
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE held(product_id) AS (
        (SELECT st.product_id FROM webhook_purchase_states st
         WHERE st.project_id = p_project_id AND st.user_id = p_user_id AND st.status = 'active'
         ORDER BY st.product_id LIMIT 1)
        UNION ALL
        SELECT (SELECT st.product_id FROM webhook_purchase_states st
                WHERE st.project_id = p_project_id AND st.user_id = p_user_id AND st.status = 'active'
                  AND st.product_id > h.product_id
                ORDER BY st.product_id LIMIT 1)
        FROM held h WHERE h.product_id IS NOT NULL
    )
    SELECT DISTINCT ON (e.entitlement) e.entitlement, b.environment, b.original_transaction_id, b.product_id,
        b.access_ends_at
    FROM held h
    JOIN products pr ON pr.project_id = p_project_id AND pr.product_id = h.product_id
    CROSS JOIN LATERAL (SELECT st.environment, st.original_transaction_id, st.product_id, st.access_ends_at
        FROM webhook_purchase_states st
        WHERE st.project_id = p_project_id AND st.user_id = p_user_id AND st.status = 'active'
          AND st.product_id = h.product_id
        ORDER BY st.access_ends_at DESC NULLS FIRST, st.original_transaction_id COLLATE "C", st.environment COLLATE "C"
        LIMIT 1) b
    CROSS JOIN LATERAL unnest(pr.entitlements) AS e(entitlement)
    ORDER BY e.entitlement, b.access_ends_at DESC NULLS FIRST, b.original_transaction_id COLLATE "C",
        b.environment COLLATE "C"
$$;

-- 0012's bouncer_webhook_refresh_user over the copy, at p_at: the user's purchases whose announced access ended by
-- p_at, and p_targets (a jsonb array of {environment, original_transaction_id, holds, facts}: the user now holds
-- the purchase with these facts, or no longer holds it), announced in 0012's order (subscription.started/expired by
-- purchase date), then the entitlements recomputed (entitlement.revoked, then entitlement.granted). With p_wait
-- false, a user whose lock another transaction holds is skipped (returns false): the sweep's way to share the work.
CREATE FUNCTION bouncer_webhook_refresh_copy(p_project_id uuid, p_user_id text, p_at timestamptz, p_targets jsonb,
    p_wait boolean) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    v_state webhook_purchase_states;
    v_entitlements jsonb;
    v_reason text;
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
                PERFORM bouncer_emit_event(p_project_id, p_user_id, 'subscription.started',
                    bouncer_webhook_purchase_data(jsonb_populate_record(NULL::purchases, to_jsonb(v_state))));
            ELSIF r.known AND r.old_status = 'active' AND v_state.status = 'expired' THEN
                PERFORM bouncer_emit_event(p_project_id, p_user_id, 'subscription.expired',
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
        PERFORM bouncer_emit_event(p_project_id, p_user_id, 'entitlement.revoked', jsonb_build_object(
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
            PERFORM bouncer_emit_event(p_project_id, p_user_id, 'entitlement.granted', jsonb_build_object(
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
    RETURN true;
END;
$$;

-- Time passing: 0012's sweep over the copy. A state whose access ended before the project's oldest log row not yet
-- derived waits for the deriver (that row, e.g. a renewal, may precede the expiry).
CREATE OR REPLACE FUNCTION bouncer_webhook_sweep(p_limit int) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    v_count int := 0;
BEGIN
    FOR r IN
        SELECT DISTINCT d.project_id, d.user_id FROM (
            SELECT st.project_id, st.user_id FROM webhook_purchase_states st
            WHERE st.status = 'active' AND st.access_ends_at IS NOT NULL AND st.access_ends_at <= now()
              AND NOT EXISTS (SELECT 1 FROM (SELECT c.created_at FROM purchase_changes c
                                             WHERE c.project_id = st.project_id ORDER BY c.seq LIMIT 1) oldest
                              WHERE oldest.created_at <= st.access_ends_at)
            ORDER BY st.access_ends_at LIMIT p_limit) d
    LOOP
        IF bouncer_webhook_refresh_copy(r.project_id, r.user_id, now(), '[]', false) THEN
            v_count := v_count + 1;
        END IF;
    END LOOP;
    RETURN v_count;
END;
$$;

-- What a log row leaves for its transaction's commit (bouncer_derive_commit), in order. kind: 'facts' (data: the
-- purchase's facts after the row), 'holds' / 'drops' (user_id holds the purchase after the row, or no longer),
-- 'holders' (refresh the purchase's holders), 'refresh' (user_id), 'transferred' (data: purchase.transferred's).
CREATE TYPE bouncer_derive_step AS (kind text, user_id text, environment text, original_transaction_id text,
    data jsonb);

-- The deferred effects of one recording transaction, as 0021's triggers ran them at its commit (p_at, the
-- transaction's now()): the queue of p_steps in order, a purchase's holders being those at the end (by user id),
-- each user refreshed once, at the first mention, with the transaction's final state (the last facts of each
-- purchase, the last holds/drops of each user and purchase). One statement: linear in the steps.
CREATE FUNCTION bouncer_derive_commit(p_project_id uuid, p_at timestamptz, p_steps bouncer_derive_step[])
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
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
            PERFORM bouncer_emit_event(p_project_id, r.user_id, 'purchase.transferred', r.data);
        ELSE
            PERFORM bouncer_webhook_refresh_copy(p_project_id, r.user_id, p_at, r.targets, true);
        END IF;
    END LOOP;
END;
$$;

-- Derives the webhook events of the project's p_limit oldest log rows (NULL: all) and the rest of their
-- transactions (a transaction is replayed whole) and deletes the rows, in the caller's transaction; the number of
-- rows consumed. Returns 0 without waiting when another transaction is deriving the project, unless p_wait (erase:
-- everything before it must be derived first).
--
-- Each recording transaction is replayed as 0021's triggers ran in it, from its rows alone and the copy: per row
-- in seq order transaction.refunded and the transition events (the row's holders, its before/after facts); then
-- its deferred effects (bouncer_derive_commit). So a batch gives exactly the events of one derive per transaction.
CREATE FUNCTION bouncer_derive_changes(p_project_id uuid, p_limit int, p_wait boolean DEFAULT false) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
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
BEGIN
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(16980, hashtext(p_project_id::text));
    ELSIF NOT pg_try_advisory_xact_lock(16980, hashtext(p_project_id::text)) THEN
        RETURN 0;
    END IF;
    -- A new statement after the lock: sees a webhook created (and seeded) by the lock's previous holder.
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = p_project_id) THEN
        DELETE FROM purchase_changes c WHERE c.project_id = p_project_id AND c.seq IN (
            SELECT c1.seq FROM purchase_changes c1 WHERE c1.project_id = p_project_id ORDER BY c1.seq LIMIT p_limit);
        GET DIAGNOSTICS v_count = ROW_COUNT;
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
                'environment', r.environment, 'original_transaction_id', r.original_transaction_id));
            v_new := jsonb_populate_record(NULL::purchases, (d -> 'new') || jsonb_build_object(
                'environment', r.environment, 'original_transaction_id', r.original_transaction_id));
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
    DELETE FROM purchase_changes c WHERE c.project_id = p_project_id AND c.xact = ANY (v_xacts);
    RETURN v_count;
END;
$$;

-- A webhook created: what the project's users hold now is what was announced (no replay of old grants), and the
-- log rows pending so far, whose changes that state already includes, are consumed. The copy in one statement (one
-- snapshot), then its entitlements; the caller holds the project's deriver lock (16980) and creates the endpoint in
-- the same transaction.
CREATE FUNCTION bouncer_webhook_seed(p_project_id uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    WITH consumed AS (
        DELETE FROM purchase_changes c WHERE c.project_id = p_project_id
    )
    INSERT INTO webhook_purchase_states
    SELECT st.* FROM subscriptions s
    JOIN purchases p ON p.project_id = s.project_id AND p.environment = s.environment
                    AND p.original_transaction_id = s.original_transaction_id
    CROSS JOIN LATERAL bouncer_webhook_state(p_project_id, s.user_id, bouncer_change_snapshot(p)
        || jsonb_build_object('environment', p.environment, 'original_transaction_id', p.original_transaction_id),
        now()) st
    WHERE s.project_id = p_project_id AND s.revoked_at IS NULL
    ON CONFLICT DO NOTHING;
    INSERT INTO webhook_entitlement_states (project_id, user_id, entitlement, environment, original_transaction_id,
        product_id, expires_at)
    SELECT p_project_id, u.user_id, n.* FROM (
        SELECT DISTINCT st.user_id FROM webhook_purchase_states st WHERE st.project_id = p_project_id) u
    CROSS JOIN LATERAL bouncer_webhook_copy_entitlements(p_project_id, u.user_id) n
    ON CONFLICT DO NOTHING;
END;
$$;

-- The triggers of 0012 and 0021 leave the hot tables.
DROP TRIGGER webhook_subscription_inserted ON subscriptions;
DROP TRIGGER webhook_subscription_updated ON subscriptions;
DROP TRIGGER webhook_purchase_updated ON purchases;
DROP TRIGGER webhook_purchase_refresh ON purchases;
DROP TRIGGER webhook_transaction_revoked ON transactions;
DROP TRIGGER webhook_ownership_moved ON ownership_events;
DROP FUNCTION bouncer_webhook_on_subscription();
DROP FUNCTION bouncer_webhook_on_purchase();
DROP FUNCTION bouncer_webhook_on_purchase_commit();
DROP FUNCTION bouncer_webhook_on_transaction();
DROP FUNCTION bouncer_webhook_on_ownership();
DROP FUNCTION bouncer_webhook_refresh_once(uuid, text);

-- Announced state only for projects with a webhook.
DELETE FROM webhook_purchase_states st
WHERE NOT EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = st.project_id);
DELETE FROM webhook_entitlement_states st
WHERE NOT EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = st.project_id);

-- What a project with a webhook announced so far: its copy takes the facts of the purchases it holds.
UPDATE webhook_purchase_states st SET (latest_transaction_id, product_id, type, purchase_date, expires_date,
    grace_period_expires_date, revocation_date, revocation_reason, revocation_type, auto_renew_status) = (
    SELECT f.latest_transaction_id, f.product_id, f.type, f.purchase_date, f.expires_date,
        f.grace_period_expires_date, f.revocation_date, f.revocation_reason, f.revocation_type, f.auto_renew_status
    FROM jsonb_populate_record(NULL::webhook_purchase_states, bouncer_change_snapshot(p)) f)
FROM purchases p
WHERE p.project_id = st.project_id AND p.environment = st.environment
  AND p.original_transaction_id = st.original_transaction_id;

-- Read the live tables; the copy replaced them.
DROP FUNCTION bouncer_webhook_refresh_user(uuid, text, boolean);
DROP FUNCTION bouncer_webhook_user_entitlements(uuid, text, timestamptz);
