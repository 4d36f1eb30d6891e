-- Records one verified transaction and, when p_user_id is given, binds its purchase to the user under
-- p_transfer_policy, in one statement (one round trip instead of about ten), appending the change to the log (the
-- lines marked "log"). Returns the purchase as now stored, the entitlements of the posted product (empty when it
-- has no mapping), the ownership decision ('bind', 'already_owned', 'transfer', 'share'; NULL without a user),
-- for a transfer the users who lost the purchase, and the transaction's stored status facts (expiry, revocation,
-- signed date) as the call left them. p_source says who wrote the facts (transactions.source).
--
-- The tenant first (0075: transactions, purchases and transaction_jws have no foreign key to projects): the project's
-- record lock (16981) shared, then the project looked up without a row lock (in the statement that reads the posted
-- product's entitlements: a missing project is a missing row). A project's deletion takes the lock
-- exclusively (bouncer_project_deleted), so it waits for this transaction, or this call for its commit and then finds
-- no project and refuses with 23503, the foreign key's SQLSTATE. Shared advisory locks never conflict with each
-- other and live in memory: concurrent receipts no longer share-lock the project's row (a MultiXact and a WAL record
-- each time two did). A group commit's later calls find the lock already held by the transaction.
--
-- Locks are then taken in the order the Swift store always used: the transactions row, the purchases row, then the
-- purchase's subscriptions rows; the hand-over advisory lock only on the two rare paths (a purchase created, a
-- renewal for a purchase not yet known). Each statement of a VOLATILE function takes a new snapshot under READ
-- COMMITTED, so a statement after a lock wait sees what the lock holder committed. A refusal raises, which rolls
-- back everything the call wrote: SQLSTATE BRTC1 (transaction conflict) and BRPO1 (purchase owned by another user
-- under the block policy); the Swift store maps both to its DomainErrors.
--
-- The only live author of these write rules; their executable specification is PurchaseState.applying and
-- OwnershipRules.decide in Tests/Specification, and StorageTests.RuleTableTests / WriteRulesOracleTests run both on
-- the same facts. The stores call it through bouncer_record_transactions, which records a batch made only of first
-- posts set-based (where these rules decide nothing: insert, create, bind) and calls this for every other batch;
-- ReceiptRecordingTests.testFirstPostsRecordAsTheirCallsWould compares the two row by row. What both write from the
-- payload, a refund and the log row is stated once: bouncer_transaction_columns, bouncer_change_refund,
-- bouncer_change_tx, bouncer_change_data, bouncer_purchase_adopt.
--
-- What a call costs is mostly its statements' executor start-ups (a few rows each), so each path runs as few as it
-- can (wp6, bench/README's issue 22 section): a first post of a transaction inserts it in one statement (the stored
-- row is read and locked only when the insert meets one); a renewal or an already stored transaction looks for its
-- purchase first, an original transaction inserts it first; a purchase just created has no holders to read; the
-- payload's SQL fields and the advisory locks are plain PL/pgSQL expressions, which run without an executor (PERFORM
-- starts one). The log append stays a PERFORM: on Citus, bouncer_append_change called from a simple expression left
-- the tenant's shard locked until isolate_tenant_to_new_shard timed out
-- (CitusOperationsE2ETests.testOneTenantMovesToAShardOfItsOwnWhileItIsRead). A new purchase bound to its user: 7
-- statements and the binding's foreign-key check, was 12 (bench/api.d/record-cpu counts them).
CREATE OR REPLACE FUNCTION bouncer_record_transaction(
    p_project_id uuid, p_transaction_id text, p_original_transaction_id text, p_product_id text, p_type text,
    p_environment text, p_bundle_id text, p_purchase_date timestamptz, p_original_purchase_date timestamptz,
    p_expires_date timestamptz, p_revocation_date timestamptz, p_revocation_reason int, p_app_account_token uuid,
    p_ownership_type text, p_signed_date timestamptz, p_payload jsonb, p_user_id text, p_device_id text,
    p_transfer_policy text, p_now timestamptz, p_source text DEFAULT 'receipt')
RETURNS TABLE (purchase purchases, entitlements text[], ownership text, previous_owners text[],
    stored_expires_date timestamptz, stored_revocation_date timestamptz, stored_signed_date timestamptz)
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
    v_locked boolean := false;      -- the stored purchase was found (and locked) before any insert
    v_old purchases;                -- log: the purchase before this call (NULL when the call created it)
    v_had_row boolean := false;     -- log: the transaction was stored before this call …
    v_old_revocation timestamptz;   -- log: … with this revocation date …
    v_inserted boolean;             -- the transaction was new
    v_columns bouncer_transaction_columns; -- the payload's fields for SQL
    v_refund jsonb;
    v_tx_old jsonb;                 -- log: … and these overview fields (NULL: not stored) …
    v_tx_new jsonb;                 -- log: … and after it
    v_p_old jsonb;                  -- log: the purchase's overview fields before this call …
    v_p_new jsonb;                  -- log: … and after it
    v_void text;                    -- the advisory locks' result: PERFORM would run each through an executor
                                    -- (SPI), an assignment evaluates it as a simple expression (PL/pgSQL's fast path)
BEGIN
    v_void := pg_advisory_xact_lock_shared(16981, hashtext(p_project_id::text))::text;
    -- The project and the posted product's entitlements in one statement (a reference table and a tenant table
    -- filtered by the same project id: routable on Citus). No row: no project.
    SELECT pr.entitlements INTO entitlements
    FROM projects p
    LEFT JOIN products pr ON pr.project_id = p_project_id AND pr.product_id = p_product_id
    WHERE p.id = p_project_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'project % does not exist', p_project_id USING ERRCODE = 'foreign_key_violation';
    END IF;
    entitlements := COALESCE(entitlements, '{}');

    -- The payload's fields for SQL (an inlined SQL function: a plain expression, no executor), for the insert and
    -- the update below.
    v_columns := bouncer_transaction_columns(p_payload);

    -- The transaction, inserted when new: one statement for a first post (every new purchase and renewal). A posted
    -- transaction already stored (ours from an earlier call of this statement, or one committed before: a concurrent
    -- inserter is waited for) is then read and locked, and updated below.
    INSERT INTO transactions AS t (project_id, transaction_id, original_transaction_id, product_id, type, environment,
        bundle_id, purchase_date, original_purchase_date, expires_date, revocation_date, revocation_reason,
        app_account_token, ownership_type, signed_date, payload, first_seen_at, last_seen_at, source,
        app_transaction_id, offer_period, offer_discount_type, revocation_type, revocation_percentage,
        advanced_commerce_info, price_milli, currency, is_renewal, ends_at)
    VALUES (p_project_id, p_transaction_id, p_original_transaction_id, p_product_id, p_type, p_environment,
        p_bundle_id, p_purchase_date, p_original_purchase_date, p_expires_date, p_revocation_date,
        p_revocation_reason, p_app_account_token, p_ownership_type, p_signed_date, p_payload, p_now, p_now, p_source,
        v_columns.app_transaction_id, v_columns.offer_period, v_columns.offer_discount_type,
        v_columns.revocation_type, v_columns.revocation_percentage, v_columns.advanced_commerce_info,
        v_columns.price_milli, v_columns.currency, p_transaction_id <> p_original_transaction_id,
        LEAST(p_expires_date, p_revocation_date))
    ON CONFLICT (project_id, environment, transaction_id) DO NOTHING
    -- The columns, not the whole row t: on Citus that names the shard's row type.
    RETURNING t.* INTO v_stored;
    v_inserted := FOUND;
    IF NOT v_inserted THEN
        -- log: the stored transaction's revocation and overview fields, read (and locked) before the update. A new
        -- statement, so it sees the row the insert met; FOR UPDATE returns the latest committed version, so a
        -- concurrent update of the same transaction is waited for, never missed. The row comes here and
        -- bouncer_overview_fields runs on it here, not in the statement: on Citus the statement runs on the
        -- tenant's shard, whose whole-row type (transactions_102008) no function takes (deploy/citus.md).
        SELECT t.* INTO v_stored
        FROM transactions t
        WHERE t.project_id = p_project_id AND t.environment = p_environment AND t.transaction_id = p_transaction_id
        FOR UPDATE;
        v_had_row := FOUND;
        IF NOT v_had_row THEN
            -- The row the insert met is gone (deleted in between): rerun the whole transaction (retried as a
            -- serialization failure; the rerun inserts it or finds it).
            RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = 'transaction recorded concurrently',
                DETAIL = 'the stored row it met is no longer there';
        END IF;
        v_old_revocation := v_stored.revocation_date;
        v_tx_old := bouncer_overview_fields(v_stored);
        -- Only while the stored identity (original transaction, product, bundle; the environment is in the key) is
        -- the signed one; otherwise the call is refused, naming the fields that differ.
        IF v_stored.original_transaction_id IS DISTINCT FROM p_original_transaction_id THEN
            v_differing := v_differing || 'original_transaction_id'::text;
        END IF;
        IF v_stored.product_id IS DISTINCT FROM p_product_id THEN
            v_differing := v_differing || 'product_id'::text;
        END IF;
        IF v_stored.bundle_id IS DISTINCT FROM p_bundle_id THEN
            v_differing := v_differing || 'bundle_id'::text;
        END IF;
        IF cardinality(v_differing) > 0 THEN
            RAISE EXCEPTION USING ERRCODE = 'BRTC1', MESSAGE = 'transaction conflict',
                DETAIL = 'differing fields: ' || array_to_string(v_differing, ', ');
        END IF;
        -- Facts refreshed only when signed later (the row is locked: its signed_date is the one to beat),
        -- last_seen_at always, first_seen_at never.
        IF p_signed_date > v_stored.signed_date THEN
            UPDATE transactions t SET type = p_type, purchase_date = p_purchase_date,
                original_purchase_date = p_original_purchase_date, expires_date = p_expires_date,
                revocation_date = p_revocation_date, revocation_reason = p_revocation_reason,
                app_account_token = p_app_account_token, ownership_type = p_ownership_type, payload = p_payload,
                app_transaction_id = v_columns.app_transaction_id, offer_period = v_columns.offer_period,
                offer_discount_type = v_columns.offer_discount_type, revocation_type = v_columns.revocation_type,
                revocation_percentage = v_columns.revocation_percentage,
                advanced_commerce_info = v_columns.advanced_commerce_info, price_milli = v_columns.price_milli,
                currency = v_columns.currency, ends_at = LEAST(p_expires_date, p_revocation_date),
                source = p_source, signed_date = p_signed_date, last_seen_at = GREATEST(p_now, t.last_seen_at)
            WHERE t.project_id = p_project_id AND t.environment = p_environment
              AND t.transaction_id = p_transaction_id
            RETURNING t.* INTO v_stored;
        ELSE
            UPDATE transactions t SET last_seen_at = GREATEST(p_now, t.last_seen_at)
            WHERE t.project_id = p_project_id AND t.environment = p_environment
              AND t.transaction_id = p_transaction_id
            RETURNING t.* INTO v_stored;
        END IF;
    END IF;
    v_tx_new := bouncer_overview_fields(v_stored);

    -- The purchase. A renewal or a transaction already stored almost always finds its purchase: read and lock it
    -- first (one statement). Otherwise, or when it is not there, it is created from this transaction (a concurrent
    -- creator makes the insert wait for its commit, then do nothing). Its creator takes the hand-over lock and adopts
    -- renewal info that arrived first.
    v_created := false;
    IF NOT v_inserted OR p_transaction_id <> p_original_transaction_id THEN
        SELECT * INTO v_purchase FROM purchases p
        WHERE p.project_id = p_project_id AND p.environment = p_environment
          AND p.original_transaction_id = p_original_transaction_id
        FOR UPDATE;
        v_locked := FOUND;
    END IF;
    IF NOT v_locked THEN
        INSERT INTO purchases (project_id, original_transaction_id, latest_transaction_id, product_id, type,
            environment, purchase_date, expires_date, revocation_date, revocation_reason, ownership_type,
            latest_signed_date, created_at, updated_at)
        VALUES (p_project_id, p_original_transaction_id, p_transaction_id, p_product_id, p_type, p_environment,
            p_purchase_date, p_expires_date, p_revocation_date, p_revocation_reason, p_ownership_type, p_signed_date,
            p_now, p_now)
        ON CONFLICT (project_id, environment, original_transaction_id) DO NOTHING
        RETURNING * INTO v_purchase;
        v_created := FOUND;
    END IF;
    IF v_created THEN
        v_void := pg_advisory_xact_lock(16978,
            hashtext(p_project_id::text || '/' || p_environment || '/' || p_original_transaction_id))::text;
        DELETE FROM pending_renewals r
        WHERE r.project_id = p_project_id AND r.environment = p_environment
          AND r.original_transaction_id = p_original_transaction_id
        RETURNING * INTO v_pending;
        IF FOUND THEN
            v_purchase := bouncer_purchase_adopt(v_pending, p_now);
        END IF;
    ELSIF v_locked THEN
        v_old := v_purchase;
    ELSE
        -- Not created here: the stored purchase, locked (a creator's RETURNING already holds its new row).
        SELECT * INTO v_purchase FROM purchases p
        WHERE p.project_id = p_project_id AND p.environment = p_environment
          AND p.original_transaction_id = p_original_transaction_id
        FOR UPDATE;
        v_old := v_purchase;
    END IF;

    -- Newer facts win (bouncer_purchase_superseded: PurchaseState.isSuperseded).
    v_newer := bouncer_purchase_superseded(v_purchase, p_transaction_id, p_purchase_date, p_signed_date);
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
        -- The current holders, locked, in binding order (OwnershipRules.decide's currentOwners). A purchase this
        -- call created has none: a binding references its purchase (subscriptions' foreign key), and no other
        -- transaction sees the new row before this one commits.
        IF NOT v_created THEN
            FOR v_owner IN
                SELECT s.user_id FROM subscriptions s
                WHERE s.project_id = p_project_id AND s.environment = p_environment
                  AND s.original_transaction_id = p_original_transaction_id AND s.revoked_at IS NULL
                ORDER BY s.bound_at, s.user_id COLLATE "C"
                FOR UPDATE
            LOOP
                v_owners := v_owners || v_owner;
            END LOOP;
        END IF;
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
        -- bound_at), or an active one's new device id. An active binding posted again as it is stays as it is
        -- (updated_at: when the binding last changed): no new row version for a renewal by its holder.
        INSERT INTO subscriptions AS s (project_id, user_id, environment, original_transaction_id, device_id,
            bound_at, revoked_at, updated_at)
        VALUES (p_project_id, p_user_id, p_environment, p_original_transaction_id, p_device_id, p_now, NULL, p_now)
        ON CONFLICT (project_id, user_id, environment, original_transaction_id) DO UPDATE SET
            bound_at = CASE WHEN s.revoked_at IS NULL THEN s.bound_at ELSE EXCLUDED.bound_at END,
            revoked_at = NULL,
            device_id = COALESCE(EXCLUDED.device_id, s.device_id),
            updated_at = EXCLUDED.updated_at
        WHERE s.revoked_at IS NOT NULL OR s.device_id IS DISTINCT FROM COALESCE(EXCLUDED.device_id, s.device_id);
    END IF;

    -- log: a refund newly recorded (a revocation that is not a Family Sharing revoke), then the change.
    IF v_inserted OR (v_had_row AND v_old_revocation IS NULL) THEN
        v_refund := bouncer_change_refund(v_stored);
    END IF;
    v_p_old := bouncer_overview_purchase_fields(v_old);
    v_p_new := bouncer_overview_purchase_fields(v_purchase);
    PERFORM bouncer_append_change(p_project_id, p_environment, p_original_transaction_id, v_old, v_purchase,
        CASE WHEN p_user_id IS NOT NULL THEN v_owners END, v_refund,
        CASE WHEN v_decision = 'transfer' THEN v_previous END,
        CASE WHEN v_decision = 'transfer' THEN p_user_id END,
        CASE WHEN p_user_id IS NOT NULL AND NOT (p_user_id = ANY (v_owners)) THEN p_user_id END,
        bouncer_change_tx(v_tx_old, v_tx_new, v_p_old, v_p_new));

    purchase := v_purchase;
    ownership := v_decision;
    previous_owners := v_previous;
    -- The transaction's status facts as this call left them (its insert's or update's RETURNING; the row stays
    -- locked until commit, so they are what commits unless a later call of the same statement records the same
    -- transaction again, and that call returns its own): the receipt's answer shows them, not the posted facts.
    stored_expires_date := v_stored.expires_date;
    stored_revocation_date := v_stored.revocation_date;
    stored_signed_date := v_stored.signed_date;
    RETURN NEXT;
END;
$$;
