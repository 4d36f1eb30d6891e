-- 0019_webhook_refresh_at_commit: a user's webhook refresh runs once per database transaction, at commit.
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
