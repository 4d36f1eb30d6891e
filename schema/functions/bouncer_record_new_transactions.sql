-- Records a batch of new transactions set-based for bouncer_record_transactions, or nothing (no row) when the batch
-- is not one. Each element must be a transaction not stored yet, no two elements of one purchase, its project there,
-- and either
--   a first post: the first transaction of its purchase (transaction_id = original_transaction_id), the purchase not
--     stored yet. bouncer_record_transaction's rules decide nothing for it: insert the transaction, create the
--     purchase from it, adopt pending renewal info, bind the user to a purchase nobody holds ('bind'), log it;
--   or a renewal posted by the one user who holds its purchase (user_id given, the purchase's active holders exactly
--     that user). The rules decide only whether its facts supersede the purchase's (bouncer_purchase_superseded); the
--     binding stays as it is ('already_owned': written only for a new device id), the change logged with the purchase
--     before and after.
-- Anything else (a re-post, a renewal without a user or of a purchase held by someone else, by several users or by
-- nobody yet) leaves the batch to bouncer_record_transaction's calls. Each table is written once per batch, with what
-- both state once: bouncer_transaction_columns, bouncer_purchase_superseded, bouncer_purchase_adopt,
-- bouncer_change_refund, bouncer_change_tx, bouncer_change_data. ReceiptRecordingTests compares the two row by row
-- (testFirstPostsRecordAsTheirCallsWould, testRenewalsRecordAsTheirCallsWould); RuleTableTests and
-- WriteRulesOracleTests run through both.
--
-- The check and the writes are separate statements: a transaction or purchase that another transaction commits in
-- between (an insert then meets its row), or a holder who changed, makes the batch rerun as a serialization failure
-- (SQLSTATE 40001, the pool retries), and the rerun's check sends it to the calls. The locks are the calls' own, in
-- their order per element: the projects' record lock shared (before the project is looked up), the transactions' rows
-- (inserted) and the new purchases' rows (inserted), each renewal's purchase row, then its holders' rows (a statement
-- after the purchase's: a new snapshot sees a holder committed while it waited), then each new purchase's hand-over
-- lock.
--
-- Planned generic (plan_cache_mode): a custom plan would be sized by each batch's length and planned again at every
-- batch, as the group commit's statement once was (bench/README, session 12). Every statement joins a few elements
-- to tables by their keys: nested loops over the keys' indexes, never a scan of a table (a plan made while the tables
-- were small, before their statistics caught up, would keep scanning them as they grow). Never on Citus.
CREATE OR REPLACE FUNCTION bouncer_record_new_transactions(p_recordings bouncer_recording[])
RETURNS TABLE (ord bigint, purchase purchases, entitlements text[], ownership text, previous_owners text[],
    stored_expires_date timestamptz, stored_revocation_date timestamptz, stored_signed_date timestamptz)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
DECLARE
    v_project uuid := p_recordings[1].project_id;  -- the batch's one project, or NULL
    v_new boolean;
    v_first_posts bigint := 0;
    v_renewals bigint := 0;
    v_count bigint;
    v_held bigint;
    v_old purchases[];              -- the renewals' purchases before the batch (locked), for the log
    v_void text;
    v_adopted record;
    r bouncer_recording;
BEGIN
    FOREACH r IN ARRAY p_recordings LOOP
        IF r.project_id IS DISTINCT FROM v_project THEN
            v_project := NULL;
        END IF;
        IF r.transaction_id = r.original_transaction_id THEN
            v_first_posts := v_first_posts + 1;
        ELSIF r.user_id IS NULL THEN
            RETURN;
        ELSE
            v_renewals := v_renewals + 1;
        END IF;
    END LOOP;
    -- The projects' record locks, shared, before anything reads them (bouncer_record_transaction's first step).
    IF v_project IS NOT NULL THEN
        v_void := pg_advisory_xact_lock_shared(16981, hashtext(v_project::text))::text;
    ELSE
        PERFORM pg_advisory_xact_lock_shared(16981, hashtext(x.project_id::text))
        FROM (SELECT DISTINCT f.project_id FROM unnest(p_recordings) f ORDER BY f.project_id) x;
    END IF;
    SELECT COALESCE(bool_and(f.posts = 1
            AND EXISTS (SELECT 1 FROM projects p WHERE p.id = f.project_id)
            AND NOT EXISTS (SELECT 1 FROM transactions t WHERE t.project_id = f.project_id
                AND t.environment = f.environment AND t.transaction_id = f.transaction_id)
            AND CASE WHEN f.transaction_id = f.original_transaction_id
                THEN NOT EXISTS (SELECT 1 FROM purchases p WHERE p.project_id = f.project_id
                    AND p.environment = f.environment AND p.original_transaction_id = f.original_transaction_id)
                ELSE ARRAY(SELECT s.user_id FROM subscriptions s WHERE s.project_id = f.project_id
                    AND s.environment = f.environment AND s.original_transaction_id = f.original_transaction_id
                    AND s.revoked_at IS NULL) = ARRAY[f.user_id] END),
        false)
    INTO v_new
    FROM (SELECT f.*, count(*) OVER (PARTITION BY f.project_id, f.environment, f.original_transaction_id) AS posts
          FROM unnest(p_recordings) f) f;
    IF NOT v_new THEN
        RETURN;
    END IF;

    -- The transactions, and the purchases created from the first posts, in ord order.
    WITH f AS (SELECT f.*, bouncer_transaction_columns(f.payload) AS c FROM unnest(p_recordings) f),
    inserted AS (
        INSERT INTO transactions AS t (project_id, transaction_id, original_transaction_id, product_id, type,
            environment, bundle_id, purchase_date, original_purchase_date, expires_date, revocation_date,
            revocation_reason, app_account_token, ownership_type, signed_date, payload, first_seen_at, last_seen_at,
            source, app_transaction_id, offer_period, offer_discount_type, revocation_type, revocation_percentage,
            advanced_commerce_info, price_milli, currency, is_renewal, ends_at)
        SELECT f.project_id, f.transaction_id, f.original_transaction_id, f.product_id, f.type, f.environment,
            f.bundle_id, f.purchase_date, f.original_purchase_date, f.expires_date, f.revocation_date,
            f.revocation_reason, f.app_account_token, f.ownership_type, f.signed_date, f.payload, f.now, f.now,
            f.source, (f.c).app_transaction_id, (f.c).offer_period, (f.c).offer_discount_type, (f.c).revocation_type,
            (f.c).revocation_percentage, (f.c).advanced_commerce_info, (f.c).price_milli, (f.c).currency,
            f.transaction_id <> f.original_transaction_id, LEAST(f.expires_date, f.revocation_date)
        FROM f ORDER BY f.ord
        ON CONFLICT (project_id, environment, transaction_id) DO NOTHING
        RETURNING t.project_id, t.environment, t.transaction_id),
    created AS (
        INSERT INTO purchases AS p (project_id, original_transaction_id, latest_transaction_id, product_id, type,
            environment, purchase_date, expires_date, revocation_date, revocation_reason, ownership_type,
            latest_signed_date, created_at, updated_at)
        SELECT f.project_id, f.original_transaction_id, f.transaction_id, f.product_id, f.type, f.environment,
            f.purchase_date, f.expires_date, f.revocation_date, f.revocation_reason, f.ownership_type, f.signed_date,
            f.now, f.now
        FROM f JOIN inserted i ON i.project_id = f.project_id AND i.environment = f.environment
            AND i.transaction_id = f.transaction_id
        WHERE f.transaction_id = f.original_transaction_id
        ORDER BY f.ord
        ON CONFLICT (project_id, environment, original_transaction_id) DO NOTHING
        RETURNING 1)
    SELECT (SELECT count(*) FROM inserted) + (SELECT count(*) FROM created) INTO v_count;
    IF v_count <> cardinality(p_recordings) + v_first_posts THEN
        RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = 'transaction recorded concurrently',
            DETAIL = 'a transaction or purchase of the batch was stored by another transaction after the batch looked';
    END IF;

    IF v_renewals > 0 THEN
        -- The renewals' purchases, locked in ord order and kept as they were for the log; then, in a statement of
        -- its own (a new snapshot), their holders, locked: still the poster alone.
        SELECT array_agg(l.p ORDER BY l.ord) INTO v_old
        FROM (SELECT f.ord, p FROM unnest(p_recordings) f
              JOIN purchases p ON p.project_id = f.project_id AND p.environment = f.environment
                AND p.original_transaction_id = f.original_transaction_id
              WHERE f.transaction_id <> f.original_transaction_id
              ORDER BY f.ord FOR UPDATE OF p) l;
        SELECT count(*), count(*) FILTER (WHERE l.user_id = l.poster) INTO v_count, v_held
        FROM (SELECT s.user_id, f.user_id AS poster FROM unnest(p_recordings) f
              JOIN subscriptions s ON s.project_id = f.project_id AND s.environment = f.environment
                AND s.original_transaction_id = f.original_transaction_id AND s.revoked_at IS NULL
              WHERE f.transaction_id <> f.original_transaction_id
              ORDER BY f.ord, s.bound_at, s.user_id COLLATE "C" FOR UPDATE OF s) l;
        IF cardinality(v_old) IS DISTINCT FROM v_renewals::int OR v_count <> v_renewals OR v_held <> v_renewals THEN
            RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = 'purchase changed concurrently',
                DETAIL = 'a renewed purchase or its holders changed after the batch looked';
        END IF;
        -- Newer facts win.
        UPDATE purchases p SET latest_transaction_id = f.transaction_id, product_id = f.product_id, type = f.type,
            purchase_date = f.purchase_date, expires_date = f.expires_date, revocation_date = f.revocation_date,
            revocation_reason = f.revocation_reason, ownership_type = f.ownership_type,
            latest_signed_date = f.signed_date, updated_at = f.now
        FROM unnest(p_recordings) f
        WHERE p.project_id = f.project_id AND p.environment = f.environment
          AND p.original_transaction_id = f.original_transaction_id AND f.transaction_id <> f.original_transaction_id
          AND bouncer_purchase_superseded(p, f.transaction_id, f.purchase_date, f.signed_date);
    END IF;

    IF v_first_posts > 0 THEN
        -- Renewal info that arrived before its purchase (bouncer_record_renewal), adopted under each new purchase's
        -- hand-over lock, taken in ord order as the calls would.
        PERFORM pg_advisory_xact_lock(16978, hashtext(f.project_id::text || '/' || f.environment || '/'
            || f.original_transaction_id))
        FROM unnest(p_recordings) f WHERE f.transaction_id = f.original_transaction_id ORDER BY f.ord;
        FOR v_adopted IN
            DELETE FROM pending_renewals w USING unnest(p_recordings) f
            WHERE w.project_id = f.project_id AND w.environment = f.environment
              AND w.original_transaction_id = f.original_transaction_id
              AND f.transaction_id = f.original_transaction_id
            RETURNING w AS pending, f.now
        LOOP
            PERFORM bouncer_purchase_adopt(v_adopted.pending, v_adopted.now);
        END LOOP;
    END IF;

    -- Each purchase as now stored, its binding (a first post's user bound to its new purchase; a renewal's holder's
    -- new device id, as the call's upsert writes it) and its log row. The log row's parts are computed a layer at a
    -- time (materialized): an SQL function is inlined only when an argument it uses twice is a plain column, and one
    -- that is not is planned again at every execution.
    RETURN QUERY
    WITH x AS MATERIALIZED (
        SELECT f.ord, f.project_id, f.environment, f.original_transaction_id, f.user_id, f.device_id, f.now, p,
            o AS old, f.transaction_id <> f.original_transaction_id AS renewal,
            COALESCE(pr.entitlements, '{}') AS entitlements, t.expires_date, t.revocation_date, t.signed_date,
            bouncer_change_refund(t) AS refund, bouncer_overview_fields(t) AS tx_new,
            bouncer_overview_purchase_fields(o) AS purchase_old, bouncer_overview_purchase_fields(p) AS purchase_new
        FROM unnest(p_recordings) f
        JOIN purchases p ON p.project_id = f.project_id AND p.environment = f.environment
            AND p.original_transaction_id = f.original_transaction_id
        JOIN transactions t ON t.project_id = f.project_id AND t.environment = f.environment
            AND t.transaction_id = f.transaction_id
        LEFT JOIN products pr ON pr.project_id = f.project_id AND pr.product_id = f.product_id
        LEFT JOIN LATERAL (SELECT o FROM unnest(v_old) o WHERE o.project_id = f.project_id
            AND o.environment = f.environment AND o.original_transaction_id = f.original_transaction_id) l ON true),
    y AS MATERIALIZED (
        SELECT x.ord, x.project_id, x.environment, x.original_transaction_id, x.p, x.old, x.renewal, x.user_id,
            x.refund, x.renewal AND bouncer_purchase_changed(x.old, x.p) AS changed,
            bouncer_change_tx(NULL, x.tx_new, x.purchase_old, x.purchase_new) AS tx
        FROM x),
    -- A first post's purchase was created by this statement's transaction, so no binding of it can exist: a plain
    -- insert. A renewal's holder (active, locked above) is written only for a new device id: a binding posted again
    -- as it is stays as it is (updated_at: when it last changed), no new row version, no index entries.
    bound AS (
        INSERT INTO subscriptions (project_id, user_id, environment, original_transaction_id, device_id, bound_at,
            revoked_at, updated_at)
        SELECT x.project_id, x.user_id, x.environment, x.original_transaction_id, x.device_id, x.now, NULL, x.now
        FROM x WHERE x.user_id IS NOT NULL AND NOT x.renewal ORDER BY x.ord),
    device AS (
        UPDATE subscriptions s SET device_id = x.device_id, updated_at = x.now
        FROM x
        WHERE x.renewal AND x.device_id IS NOT NULL AND s.project_id = x.project_id AND s.user_id = x.user_id
          AND s.environment = x.environment AND s.original_transaction_id = x.original_transaction_id
          AND s.device_id IS DISTINCT FROM x.device_id),
    logged AS (
        INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, purchase_before,
            purchase_after, created_at)
        SELECT y.project_id, y.environment, y.original_transaction_id, d.data, d.purchase_before, d.purchase_after,
            now()
        FROM y CROSS JOIN LATERAL bouncer_change_data(y.changed, y.old, y.p,
            CASE WHEN y.renewal THEN ARRAY[y.user_id] END, y.refund, NULL, NULL,
            CASE WHEN NOT y.renewal THEN y.user_id END, y.tx) d
        ORDER BY y.ord)
    SELECT x.ord, x.p, x.entitlements,
        CASE WHEN x.user_id IS NOT NULL THEN CASE WHEN x.renewal THEN 'already_owned' ELSE 'bind' END END,
        NULL::text[], x.expires_date, x.revocation_date, x.signed_date
    FROM x ORDER BY x.ord;
END;
$$;
