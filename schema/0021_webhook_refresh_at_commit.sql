-- 0021_webhook_refresh_at_commit: a user's webhook refresh runs once per database transaction, at commit.
--
-- 0012's triggers called bouncer_webhook_refresh_user, which reads every active binding of the user, on every
-- binding made and every purchase change. A receipt of N distinct purchases for one user (a forged Xcode receipt
-- lists thousands) thus read 1 + 2 + … + N bindings: quadratic work in one statement, holding the user's lock.
-- Now the refresh is a deferred constraint trigger: the rows of the transaction only queue it, and at commit the
-- first queued refresh of a (project, user) does the work, seeing the transaction's final state, while the
-- others find the user in the transaction's list (bouncer.refreshed_users, a transaction-local setting) and
-- return. Per transaction: one refresh per user, whatever the number of records.
--
-- What this changes in the events: the transition events of a purchase update (subscription.renewed,
-- renewal_failed, grace_period_started, auto_renew_changed) are still written by the row's immediate trigger,
-- and the diff events (subscription.started/expired, entitlement.granted/revoked) now come after all of them, from
-- the state at commit. For a single fact per transaction (a JWS, a notification) the order is 0012's.

-- Refreshes the user unless this transaction already did (at commit, the first refresh sees the final state).
CREATE FUNCTION bouncer_webhook_refresh_once(p_project_id uuid, p_user_id text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    -- md5: user ids are any text; the key must not contain the separator.
    v_key text := ' ' || p_project_id::text || '/' || md5(p_user_id) || ' ';
    v_done text := COALESCE(current_setting('bouncer.refreshed_users', true), '');
BEGIN
    IF strpos(v_done, v_key) > 0 THEN
        RETURN;
    END IF;
    PERFORM set_config('bouncer.refreshed_users', v_done || v_key, true);
    PERFORM bouncer_webhook_refresh_user(p_project_id, p_user_id);
END;
$$;

-- A binding made, re-activated or revoked: refresh the user at commit.
CREATE OR REPLACE FUNCTION bouncer_webhook_on_subscription() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM bouncer_webhook_refresh_once(NEW.project_id, NEW.user_id);
    RETURN NULL;
END;
$$;
DROP TRIGGER webhook_subscription_inserted ON subscriptions;
DROP TRIGGER webhook_subscription_updated ON subscriptions;
CREATE CONSTRAINT TRIGGER webhook_subscription_inserted AFTER INSERT ON subscriptions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION bouncer_webhook_on_subscription();
CREATE CONSTRAINT TRIGGER webhook_subscription_updated AFTER UPDATE ON subscriptions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at)
    EXECUTE FUNCTION bouncer_webhook_on_subscription();

-- A purchase's facts changed: transition events for each holder now (they need OLD and NEW), as in 0012, without
-- the refresh, which bouncer_webhook_on_purchase_commit does.
CREATE OR REPLACE FUNCTION bouncer_webhook_on_purchase() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_user text;
BEGIN
    IF NEW.type <> 'Auto-Renewable Subscription' THEN
        RETURN NULL;
    END IF;
    FOR v_user IN
        SELECT s.user_id FROM subscriptions s
        WHERE s.project_id = NEW.project_id AND s.environment = NEW.environment
          AND s.original_transaction_id = NEW.original_transaction_id AND s.revoked_at IS NULL
        ORDER BY s.user_id COLLATE "C"
    LOOP
        -- Takes the user's lock before the first event (bouncer_emit_event would too).
        PERFORM pg_advisory_xact_lock(16979, hashtext(NEW.project_id::text || '/' || v_user));
        IF NEW.latest_transaction_id IS DISTINCT FROM OLD.latest_transaction_id
           AND NEW.expires_date > COALESCE(OLD.expires_date, '-infinity') AND NEW.revocation_date IS NULL THEN
            PERFORM bouncer_emit_event(NEW.project_id, v_user, 'subscription.renewed',
                bouncer_webhook_purchase_data(NEW));
        END IF;
        IF NEW.is_in_billing_retry AND NOT COALESCE(OLD.is_in_billing_retry, false) THEN
            PERFORM bouncer_emit_event(NEW.project_id, v_user, 'subscription.renewal_failed',
                bouncer_webhook_purchase_data(NEW));
        END IF;
        IF NEW.grace_period_expires_date IS NOT NULL
           AND NEW.grace_period_expires_date > COALESCE(OLD.grace_period_expires_date, '-infinity')
           AND NEW.grace_period_expires_date > now() THEN
            PERFORM bouncer_emit_event(NEW.project_id, v_user, 'subscription.grace_period_started',
                bouncer_webhook_purchase_data(NEW)
                || jsonb_build_object('grace_period_expires_at', bouncer_webhook_time(NEW.grace_period_expires_date)));
        END IF;
        IF COALESCE(NEW.auto_renew_status, 1) IS DISTINCT FROM COALESCE(OLD.auto_renew_status, 1) THEN
            PERFORM bouncer_emit_event(NEW.project_id, v_user, 'subscription.auto_renew_changed',
                bouncer_webhook_purchase_data(NEW)
                || jsonb_build_object('auto_renew_product_id', NEW.auto_renew_product_id));
        END IF;
    END LOOP;
    RETURN NULL;
END;
$$;

-- At commit: refresh each current holder of a changed purchase (once per user and transaction).
CREATE FUNCTION bouncer_webhook_on_purchase_commit() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_user text;
BEGIN
    FOR v_user IN
        SELECT s.user_id FROM subscriptions s
        WHERE s.project_id = NEW.project_id AND s.environment = NEW.environment
          AND s.original_transaction_id = NEW.original_transaction_id AND s.revoked_at IS NULL
        ORDER BY s.user_id COLLATE "C"
    LOOP
        PERFORM bouncer_webhook_refresh_once(NEW.project_id, v_user);
    END LOOP;
    RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER webhook_purchase_refresh AFTER UPDATE ON purchases
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (OLD.latest_transaction_id IS DISTINCT FROM NEW.latest_transaction_id
        OR OLD.expires_date IS DISTINCT FROM NEW.expires_date
        OR OLD.revocation_date IS DISTINCT FROM NEW.revocation_date
        OR OLD.product_id IS DISTINCT FROM NEW.product_id
        OR OLD.grace_period_expires_date IS DISTINCT FROM NEW.grace_period_expires_date
        OR OLD.is_in_billing_retry IS DISTINCT FROM NEW.is_in_billing_retry
        OR OLD.auto_renew_status IS DISTINCT FROM NEW.auto_renew_status)
    EXECUTE FUNCTION bouncer_webhook_on_purchase_commit();

-- 0012's refresh, planned for any statistics. A burst of new rows (one receipt's thousand purchases) is planned
-- with the statistics of before it, which say "one row": PostgreSQL then joined each binding to its purchase
-- through a scan of the whole project's purchases (purchases_expires_idx, project_id only) and checked each
-- announced state against all of the user's bindings: quadratic even when run once. Each per-binding lookup is now
-- a subquery PostgreSQL cannot flatten (OFFSET 0), so it is planned on its own, by its full key: one index probe
-- per binding whatever the statistics say. Otherwise unchanged.
CREATE OR REPLACE FUNCTION bouncer_webhook_user_entitlements(p_project_id uuid, p_user_id text, p_at timestamptz)
RETURNS TABLE (entitlement text, environment text, original_transaction_id text, product_id text,
    expires_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT ON (e.entitlement) e.entitlement, p.environment, p.original_transaction_id, p.product_id,
        bouncer_purchase_access_end(p)
    FROM subscriptions s
    CROSS JOIN LATERAL (SELECT * FROM purchases p1 WHERE p1.project_id = s.project_id
        AND p1.environment = s.environment AND p1.original_transaction_id = s.original_transaction_id OFFSET 0) p
    JOIN products pr ON pr.project_id = p.project_id AND pr.product_id = p.product_id
    CROSS JOIN LATERAL unnest(pr.entitlements) AS e(entitlement)
    WHERE s.project_id = p_project_id AND s.user_id = p_user_id AND s.revoked_at IS NULL
      AND bouncer_purchase_status(p, p_at) = 'active'
    ORDER BY e.entitlement, bouncer_purchase_access_end(p) DESC NULLS FIRST, p.original_transaction_id COLLATE "C",
        p.environment COLLATE "C"
$$;

CREATE OR REPLACE FUNCTION bouncer_webhook_refresh_user(p_project_id uuid, p_user_id text, p_wait boolean DEFAULT true)
RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_now timestamptz := now();
    r record;
    v_status text;
    v_binding subscriptions;
    v_purchase purchases;
    v_reason text;
BEGIN
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(16979, hashtext(p_project_id::text || '/' || p_user_id));
    ELSIF NOT pg_try_advisory_xact_lock(16979, hashtext(p_project_id::text || '/' || p_user_id)) THEN
        RETURN false;
    END IF;

    -- Purchases: every active binding against the announced state (a new statement: a fresh snapshot that sees
    -- what the lock's previous holder committed).
    FOR r IN
        SELECT p AS purchase, bouncer_purchase_status(p, v_now) AS status, bouncer_purchase_access_end(p) AS ends,
               st.status AS old_status, st.access_ends_at AS old_ends, st.project_id IS NOT NULL AS known
        FROM subscriptions s
        CROSS JOIN LATERAL (SELECT * FROM purchases p1 WHERE p1.project_id = s.project_id
            AND p1.environment = s.environment AND p1.original_transaction_id = s.original_transaction_id OFFSET 0) p
        LEFT JOIN LATERAL (SELECT * FROM webhook_purchase_states st1 WHERE st1.project_id = s.project_id
            AND st1.user_id = s.user_id AND st1.environment = s.environment
            AND st1.original_transaction_id = s.original_transaction_id OFFSET 0) st ON true
        WHERE s.project_id = p_project_id AND s.user_id = p_user_id AND s.revoked_at IS NULL
        ORDER BY p.purchase_date NULLS FIRST, p.original_transaction_id COLLATE "C", p.environment COLLATE "C"
    LOOP
        v_purchase := r.purchase;
        IF v_purchase.type = 'Auto-Renewable Subscription' THEN
            IF NOT r.known AND r.status = 'active' THEN
                PERFORM bouncer_emit_event(p_project_id, p_user_id, 'subscription.started',
                    bouncer_webhook_purchase_data(v_purchase));
            ELSIF r.known AND r.old_status = 'active' AND r.status = 'expired' THEN
                PERFORM bouncer_emit_event(p_project_id, p_user_id, 'subscription.expired',
                    bouncer_webhook_purchase_data(v_purchase)
                    || jsonb_build_object('expired_at', bouncer_webhook_time(r.ends)));
            END IF;
        END IF;
        IF NOT r.known OR r.old_status IS DISTINCT FROM r.status OR r.old_ends IS DISTINCT FROM r.ends THEN
            INSERT INTO webhook_purchase_states AS st (project_id, user_id, environment, original_transaction_id,
                status, access_ends_at)
            VALUES (p_project_id, p_user_id, v_purchase.environment, v_purchase.original_transaction_id, r.status,
                r.ends)
            ON CONFLICT (project_id, user_id, environment, original_transaction_id) DO UPDATE SET
                status = EXCLUDED.status, access_ends_at = EXCLUDED.access_ends_at;
        END IF;
    END LOOP;
    -- Purchases the user no longer holds (transferred away).
    DELETE FROM webhook_purchase_states st
    WHERE st.project_id = p_project_id AND st.user_id = p_user_id
      AND NOT EXISTS (SELECT 1 FROM subscriptions s
          WHERE s.project_id = st.project_id AND s.user_id = st.user_id AND s.environment = st.environment
            AND s.original_transaction_id = st.original_transaction_id AND s.revoked_at IS NULL OFFSET 0);

    -- Gone: why the purchase that granted it no longer does.
    FOR r IN
        SELECT st.* FROM webhook_entitlement_states st
        WHERE st.project_id = p_project_id AND st.user_id = p_user_id
          AND NOT EXISTS (SELECT 1 FROM bouncer_webhook_user_entitlements(p_project_id, p_user_id, v_now) n
                          WHERE n.entitlement = st.entitlement)
        ORDER BY st.entitlement COLLATE "C"
    LOOP
        SELECT * INTO v_binding FROM subscriptions s
        WHERE s.project_id = p_project_id AND s.user_id = p_user_id AND s.environment = r.environment
          AND s.original_transaction_id = r.original_transaction_id;
        SELECT * INTO v_purchase FROM purchases p
        WHERE p.project_id = p_project_id AND p.environment = r.environment
          AND p.original_transaction_id = r.original_transaction_id;
        IF v_binding.revoked_at IS NOT NULL THEN
            v_reason := 'transferred';
        ELSIF v_purchase.revocation_date IS NOT NULL THEN
            v_reason := bouncer_revocation_kind(v_purchase.revocation_reason,
                (SELECT t.revocation_type FROM transactions t WHERE t.project_id = p_project_id
                   AND t.environment = v_purchase.environment AND t.transaction_id = v_purchase.latest_transaction_id));
        ELSIF v_purchase.original_transaction_id IS NOT NULL
              AND bouncer_purchase_status(v_purchase, v_now) = 'expired' THEN
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
        FROM bouncer_webhook_user_entitlements(p_project_id, p_user_id, v_now) n
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

-- purchase.transferred at commit too, so a transfer's events keep 0012's order: the previous holder's refresh
-- (entitlement.revoked, queued by the revocation before the ownership event), then purchase.transferred, then the
-- new holder's refresh.
DROP TRIGGER webhook_ownership_moved ON ownership_events;
CREATE CONSTRAINT TRIGGER webhook_ownership_moved AFTER INSERT ON ownership_events
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION bouncer_webhook_on_ownership();
