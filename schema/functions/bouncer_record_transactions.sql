-- Records a batch of verified transactions (a group commit's, or a receipt's records), element ord of
-- p_recordings being one bouncer_record_transaction call's inputs, as if those calls ran one after the other in ord
-- order: one row per element, in ord order, with that call's columns.
--
-- A batch of new transactions (first posts, and renewals posted by the one user who holds their purchase) is recorded
-- set-based by bouncer_record_new_transactions (each table written once per batch: ~8 statements for the batch instead
-- of a call and ~8 statements per receipt). Any other batch, and every batch on Citus (whose statements must each
-- route to one tenant's shard, and which plans no generic plan of a distributed statement inside a function), is one
-- bouncer_record_transaction call per element: the one author of the rules for everything else.
CREATE OR REPLACE FUNCTION bouncer_record_transactions(p_recordings bouncer_recording[])
RETURNS TABLE (ord bigint, purchase purchases, entitlements text[], ownership text, previous_owners text[],
    stored_expires_date timestamptz, stored_revocation_date timestamptz, stored_signed_date timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF current_setting('citus.version', true) IS NULL THEN
        RETURN QUERY SELECT * FROM bouncer_record_new_transactions(p_recordings);
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    -- One statement: the calls in ord order, each seeing what the previous ones wrote (VOLATILE: a new snapshot per
    -- statement inside each call). The array behind a sub-select, so every plan is sized alike and the plan cache
    -- keeps the generic one (bench/README, session 12).
    RETURN QUERY SELECT f.ord, c.* FROM unnest((SELECT p_recordings)) f
    CROSS JOIN LATERAL bouncer_record_transaction(f.project_id, f.transaction_id, f.original_transaction_id,
        f.product_id, f.type, f.environment, f.bundle_id, f.purchase_date, f.original_purchase_date, f.expires_date,
        f.revocation_date, f.revocation_reason, f.app_account_token, f.ownership_type, f.signed_date, f.payload,
        f.user_id, f.device_id, f.transfer_policy, f.now, f.source) c
    ORDER BY f.ord;
END;
$$;
