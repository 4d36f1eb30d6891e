-- 0012_webhooks: signed webhooks from a transactional outbox (issue 15, part 1).
--
-- Events are rows of webhook_events, written by TRIGGERS on the tables the record functions (0006/0008) write, so
-- an event commits or rolls back with the change that caused it: no event without its change, no change without
-- its event, nothing lost on kill -9. The record functions themselves are not touched. Other features add events
-- in their own transactions with bouncer_emit_event(project_id, user_id, type, data).
--
-- Which write emits what (per user who holds the purchase through an active binding, subscriptions.revoked_at NULL):
--   subscriptions INSERT / re-activation     subscription.started (auto-renewable, active), entitlement.granted
--   subscriptions revoked_at set (transfer)  entitlement.revoked reason "transferred"
--   ownership_events INSERT                  purchase.transferred (user_id: the new owner)
--   transactions revocation_date set         transaction.refunded (refunds only: not a Family Sharing revoke)
--   purchases UPDATE                         subscription.renewed (a new latest transaction that ends later),
--                                            subscription.renewal_failed (billing retry starts),
--                                            subscription.grace_period_started, subscription.auto_renew_changed,
--                                            then entitlement.granted / entitlement.revoked (refunded, revoked,
--                                            expired) and subscription.expired as the user's state changes
--   time passing (no write)                  bouncer_webhook_sweep(): see below
--
-- Entitlement and subscription events are computed by DIFFING against what was last announced for the user
-- (webhook_purchase_states, webhook_entitlement_states), kept for every project whether or not it has a webhook,
-- so configuring a webhook later does not replay old grants. "Expired" happens by the passage of time, not by a
-- write: bouncer_webhook_sweep() (called every few seconds by every `bouncer serve`) finds announced-active
-- purchases whose access end has passed and refreshes their users. A refresh holds the user's advisory lock and
-- re-reads committed state, so two instances sweeping at once announce each expiry exactly once.
--
-- Order: every event of a user is inserted under the user's transaction-scoped advisory lock (16979), so events of
-- one user get increasing seq in commit order; the dispatcher sends an event only when no earlier event of the same
-- (project, user) is still pending. Events without a user (ping) are not ordered.
--
-- Events are only written when the project has a webhook that subscribes to the type (bouncer_emit_event returns
-- NULL otherwise): a project without a webhook accumulates no outbox rows. Erase (issue 15, part 5) must delete
-- the user's rows of webhook_purchase_states and webhook_entitlement_states, delete the user's pending events and
-- anonymise delivered ones (user_id, and data->>'from_user_id'/'to_user_id').

-- A project's webhook: at most one. The signing secret is needed in clear to compute HMACs, so it is sealed
-- (AES-256-GCM under BOUNCER_ENCRYPTION_KEY, the project id as associated data), never hashed. During a rotation
-- the previous secret keeps signing (one more v1= in Bouncer-Signature) until previous_secret_expires_at.
CREATE TABLE webhook_endpoints (
    project_id                   uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    url                          text        NOT NULL,
    events                       text[]      NULL,
    sealed_secret                bytea       NOT NULL,
    encryption_key_id            text        NOT NULL CHECK (encryption_key_id ~ '^[0-9a-f]{16}$'),
    sealed_previous_secret       bytea       NULL,
    previous_encryption_key_id   text        NULL CHECK (previous_encryption_key_id ~ '^[0-9a-f]{16}$'),
    previous_secret_expires_at   timestamptz NULL,
    created_at                   timestamptz NOT NULL,
    updated_at                   timestamptz NOT NULL,
    PRIMARY KEY (project_id),
    CHECK ((sealed_previous_secret IS NULL) = (previous_secret_expires_at IS NULL)
        AND (sealed_previous_secret IS NULL) = (previous_encryption_key_id IS NULL))
);
COMMENT ON COLUMN webhook_endpoints.events IS 'event types sent; NULL: all (ping is always sent)';
COMMENT ON COLUMN webhook_endpoints.sealed_secret IS 'the whsec_ secret sealed by AES-256-GCM; never in clear';

-- The outbox. seq orders events (per user: see above); id is the public evt_ id (Bouncer-Event-Id).
-- status: pending (to send, or being sent under a lease), delivered (a 2xx), failed (no 2xx within the maximum
-- age counted from retry_window_start: created_at, or the last manual retry).
CREATE TABLE webhook_events (
    project_id          uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    seq                 bigserial   NOT NULL,
    id                  text        NOT NULL CHECK (id ~ '^evt_[0-9a-f]{32}$'),
    type                text        NOT NULL,
    user_id             text        NULL,
    data                jsonb       NOT NULL,
    created_at          timestamptz NOT NULL,
    status              text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts            int         NOT NULL DEFAULT 0,
    next_attempt_at     timestamptz NOT NULL,
    retry_window_start  timestamptz NOT NULL,
    lease_owner         text        NULL,
    lease_until         timestamptz NULL,
    last_attempt_at     timestamptz NULL,
    last_status_code    int         NULL,
    last_error          text        NULL,
    delivered_at        timestamptz NULL,
    PRIMARY KEY (project_id, seq),
    UNIQUE (project_id, id)
);
-- The dispatcher's claim: due pending events, oldest first, across projects.
CREATE INDEX webhook_events_due_idx ON webhook_events (next_attempt_at, seq) WHERE status = 'pending';
-- Per-user order: "is an earlier event of this user still pending?"
CREATE INDEX webhook_events_user_pending_idx ON webhook_events (project_id, user_id, seq) WHERE status = 'pending';
-- The deliveries list (newest first, optionally by status) and erase (by user).
CREATE INDEX webhook_events_status_idx ON webhook_events (project_id, status, seq DESC);
CREATE INDEX webhook_events_user_idx ON webhook_events (project_id, user_id) WHERE user_id IS NOT NULL;

-- One row per delivery attempt: the response code, or the error when there was none (timeout, refused address…).
CREATE TABLE webhook_attempts (
    project_id    uuid        NOT NULL,
    event_seq     bigint      NOT NULL,
    attempt       int         NOT NULL,
    attempted_at  timestamptz NOT NULL,
    status_code   int         NULL,
    error         text        NULL,
    duration_ms   int         NOT NULL,
    instance      text        NOT NULL,
    PRIMARY KEY (project_id, event_seq, attempt),
    FOREIGN KEY (project_id, event_seq) REFERENCES webhook_events (project_id, seq) ON DELETE CASCADE
);

-- What was last announced per user: each actively bound purchase's status and when its access ends (the sweep's
-- index), and each active entitlement with the purchase that grants it (for the reason when it goes).
CREATE TABLE webhook_purchase_states (
    project_id               uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id                  text        NOT NULL,
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    status                   text        NOT NULL CHECK (status IN ('active', 'expired', 'revoked')),
    access_ends_at           timestamptz NULL,
    PRIMARY KEY (project_id, user_id, environment, original_transaction_id)
);
CREATE INDEX webhook_purchase_states_due_idx ON webhook_purchase_states (access_ends_at)
    WHERE status = 'active' AND access_ends_at IS NOT NULL;

CREATE TABLE webhook_entitlement_states (
    project_id               uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id                  text        NOT NULL,
    entitlement              text        NOT NULL,
    environment              text        NOT NULL,
    original_transaction_id  text        NOT NULL,
    product_id               text        NOT NULL,
    expires_at               timestamptz NULL,
    PRIMARY KEY (project_id, user_id, entitlement)
);

-- ISO 8601 UTC with milliseconds, as the API renders instants.
CREATE FUNCTION bouncer_webhook_time(p_at timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- A purchase's status at an instant: StatusRules.evaluate(PurchaseState, at:) in SQL.
CREATE FUNCTION bouncer_purchase_status(p purchases, p_at timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN p.revocation_date IS NOT NULL THEN 'revoked'
        WHEN p.expires_date IS NULL OR p.expires_date > p_at THEN 'active'
        WHEN p.type = 'Auto-Renewable Subscription' AND p.grace_period_expires_date > p_at
             AND p.grace_period_expires_date > p.expires_date THEN 'active'
        ELSE 'expired' END
$$;

-- When an active purchase stops being active if nothing else happens (NULL: never), including a grace period.
CREATE FUNCTION bouncer_purchase_access_end(p purchases) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p.expires_date IS NULL THEN NULL
        ELSE GREATEST(p.expires_date,
            CASE WHEN p.type = 'Auto-Renewable Subscription' THEN p.grace_period_expires_date END) END
$$;

-- Why a revoked purchase was revoked: a refund, or a revocation (Family Sharing revoke, upgrade).
CREATE FUNCTION bouncer_revocation_kind(p_reason int, p_type text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_type = 'FAMILY_REVOKE' THEN 'revoked'
        WHEN p_reason IS NOT NULL OR p_type IN ('REFUND_FULL', 'REFUND_PRORATED') THEN 'refunded'
        ELSE 'revoked' END
$$;

-- The purchase as webhook events show it.
CREATE FUNCTION bouncer_webhook_purchase_data(p purchases) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'environment', p.environment,
        'original_transaction_id', p.original_transaction_id,
        'transaction_id', p.latest_transaction_id,
        'product_id', p.product_id,
        'expires_at', bouncer_webhook_time(p.expires_date),
        'auto_renew_enabled', CASE WHEN p.type = 'Auto-Renewable Subscription'
            THEN COALESCE(p.auto_renew_status = 1, true) ELSE false END)
$$;

-- The entitlements a user holds at an instant through active bindings to active purchases, each with the purchase
-- whose access lasts longest (NULL: forever; ties by original transaction id, then environment).
CREATE FUNCTION bouncer_webhook_user_entitlements(p_project_id uuid, p_user_id text, p_at timestamptz)
RETURNS TABLE (entitlement text, environment text, original_transaction_id text, product_id text,
    expires_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT ON (e.entitlement) e.entitlement, p.environment, p.original_transaction_id, p.product_id,
        bouncer_purchase_access_end(p)
    FROM subscriptions s
    JOIN purchases p ON p.project_id = s.project_id AND p.environment = s.environment
                    AND p.original_transaction_id = s.original_transaction_id
    JOIN products pr ON pr.project_id = p.project_id AND pr.product_id = p.product_id
    CROSS JOIN LATERAL unnest(pr.entitlements) AS e(entitlement)
    WHERE s.project_id = p_project_id AND s.user_id = p_user_id AND s.revoked_at IS NULL
      AND bouncer_purchase_status(p, p_at) = 'active'
    ORDER BY e.entitlement, bouncer_purchase_access_end(p) DESC NULLS FIRST, p.original_transaction_id COLLATE "C",
        p.environment COLLATE "C"
$$;

-- Adds an event to the outbox in the caller's transaction, if the project's webhook wants this type (ping always);
-- returns its evt_ id, or NULL when nothing was written. Takes the user's advisory lock first, so one user's events
-- are numbered in commit order. The public function other features call (manual grants, erase).
CREATE FUNCTION bouncer_emit_event(p_project_id uuid, p_user_id text, p_type text, p_data jsonb) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_events text[];
    v_id text;
BEGIN
    SELECT w.events INTO v_events FROM webhook_endpoints w WHERE w.project_id = p_project_id;
    IF NOT FOUND OR (v_events IS NOT NULL AND p_type <> 'ping' AND NOT (p_type = ANY (v_events))) THEN
        RETURN NULL;
    END IF;
    IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(16979, hashtext(p_project_id::text || '/' || p_user_id));
    END IF;
    v_id := 'evt_' || replace(gen_random_uuid()::text, '-', '');
    INSERT INTO webhook_events (project_id, id, type, user_id, data, created_at, next_attempt_at, retry_window_start)
    VALUES (p_project_id, v_id, p_type, p_user_id, COALESCE(p_data, '{}'::jsonb), now(), now(), now());
    -- Wakes idle dispatchers (LISTEN bouncer_webhook_events); delivered at commit, dropped on rollback.
    PERFORM pg_notify('bouncer_webhook_events', '');
    RETURN v_id;
END;
$$;

-- Recomputes what a user holds and announces the difference with what was last announced: subscription.started,
-- subscription.expired, entitlement.granted, entitlement.revoked. With p_wait false, a user whose lock another
-- transaction holds is skipped (returns false): the sweep's way to let two instances share the work.
CREATE FUNCTION bouncer_webhook_refresh_user(p_project_id uuid, p_user_id text, p_wait boolean DEFAULT true)
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
        JOIN purchases p ON p.project_id = s.project_id AND p.environment = s.environment
                        AND p.original_transaction_id = s.original_transaction_id
        LEFT JOIN webhook_purchase_states st ON st.project_id = s.project_id AND st.user_id = s.user_id
              AND st.environment = s.environment AND st.original_transaction_id = s.original_transaction_id
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
            AND s.original_transaction_id = st.original_transaction_id AND s.revoked_at IS NULL);

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

-- Time passing: refreshes up to p_limit users whose announced-active purchases' access has ended. Users locked by
-- another transaction are skipped (that one is refreshing them). Returns the number of users refreshed.
CREATE FUNCTION bouncer_webhook_sweep(p_limit int) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    v_count int := 0;
BEGIN
    FOR r IN
        SELECT DISTINCT d.project_id, d.user_id FROM (
            SELECT st.project_id, st.user_id FROM webhook_purchase_states st
            WHERE st.status = 'active' AND st.access_ends_at IS NOT NULL AND st.access_ends_at <= now()
            ORDER BY st.access_ends_at LIMIT p_limit) d
    LOOP
        IF bouncer_webhook_refresh_user(r.project_id, r.user_id, false) THEN
            v_count := v_count + 1;
        END IF;
    END LOOP;
    RETURN v_count;
END;
$$;

-- Triggers ------------------------------------------------------------------------------------------------------

-- A binding made, re-activated or revoked (transfer): refresh the user.
CREATE FUNCTION bouncer_webhook_on_subscription() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM bouncer_webhook_refresh_user(NEW.project_id, NEW.user_id);
    RETURN NULL;
END;
$$;
CREATE TRIGGER webhook_subscription_inserted AFTER INSERT ON subscriptions
    FOR EACH ROW EXECUTE FUNCTION bouncer_webhook_on_subscription();
CREATE TRIGGER webhook_subscription_updated AFTER UPDATE ON subscriptions
    FOR EACH ROW WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at)
    EXECUTE FUNCTION bouncer_webhook_on_subscription();

-- A purchase's facts changed: transition events for each holder, then a refresh of each holder.
CREATE FUNCTION bouncer_webhook_on_purchase() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_user text;
    v_auto boolean := NEW.type = 'Auto-Renewable Subscription';
BEGIN
    FOR v_user IN
        SELECT s.user_id FROM subscriptions s
        WHERE s.project_id = NEW.project_id AND s.environment = NEW.environment
          AND s.original_transaction_id = NEW.original_transaction_id AND s.revoked_at IS NULL
        ORDER BY s.user_id COLLATE "C"
    LOOP
        IF v_auto THEN
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
        END IF;
        PERFORM bouncer_webhook_refresh_user(NEW.project_id, v_user);
    END LOOP;
    RETURN NULL;
END;
$$;
CREATE TRIGGER webhook_purchase_updated AFTER UPDATE ON purchases
    FOR EACH ROW WHEN (OLD.latest_transaction_id IS DISTINCT FROM NEW.latest_transaction_id
        OR OLD.expires_date IS DISTINCT FROM NEW.expires_date
        OR OLD.revocation_date IS DISTINCT FROM NEW.revocation_date
        OR OLD.product_id IS DISTINCT FROM NEW.product_id
        OR OLD.grace_period_expires_date IS DISTINCT FROM NEW.grace_period_expires_date
        OR OLD.is_in_billing_retry IS DISTINCT FROM NEW.is_in_billing_retry
        OR OLD.auto_renew_status IS DISTINCT FROM NEW.auto_renew_status)
    EXECUTE FUNCTION bouncer_webhook_on_purchase();

-- A transaction refunded (its revocation date appears): transaction.refunded for each holder of its purchase.
CREATE FUNCTION bouncer_webhook_on_transaction() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_user text;
BEGIN
    IF NEW.revocation_date IS NULL
       OR (TG_OP = 'UPDATE' AND OLD.revocation_date IS NOT NULL)
       OR bouncer_revocation_kind(NEW.revocation_reason, NEW.revocation_type) <> 'refunded' THEN
        RETURN NULL;
    END IF;
    FOR v_user IN
        SELECT s.user_id FROM subscriptions s
        WHERE s.project_id = NEW.project_id AND s.environment = NEW.environment
          AND s.original_transaction_id = NEW.original_transaction_id AND s.revoked_at IS NULL
        ORDER BY s.user_id COLLATE "C"
    LOOP
        PERFORM bouncer_emit_event(NEW.project_id, v_user, 'transaction.refunded', jsonb_build_object(
            'environment', NEW.environment, 'transaction_id', NEW.transaction_id,
            'original_transaction_id', NEW.original_transaction_id, 'product_id', NEW.product_id,
            'revocation_date', bouncer_webhook_time(NEW.revocation_date),
            'revocation_reason', NEW.revocation_reason, 'revocation_type', NEW.revocation_type,
            'revocation_percentage', NEW.revocation_percentage));
    END LOOP;
    RETURN NULL;
END;
$$;
CREATE TRIGGER webhook_transaction_revoked AFTER INSERT OR UPDATE OF revocation_date ON transactions
    FOR EACH ROW EXECUTE FUNCTION bouncer_webhook_on_transaction();

-- A purchase moved between users (transfer policy): purchase.transferred for the new owner.
CREATE FUNCTION bouncer_webhook_on_ownership() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NEW.to_user_id IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM bouncer_emit_event(NEW.project_id, NEW.to_user_id, 'purchase.transferred', jsonb_build_object(
        'environment', NEW.environment, 'original_transaction_id', NEW.original_transaction_id,
        'from_user_id', NEW.from_user_id, 'to_user_id', NEW.to_user_id, 'policy', NEW.policy));
    RETURN NULL;
END;
$$;
CREATE TRIGGER webhook_ownership_moved AFTER INSERT ON ownership_events
    FOR EACH ROW EXECUTE FUNCTION bouncer_webhook_on_ownership();
