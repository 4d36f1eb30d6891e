-- Stores an App Store Server Notification and, on its first delivery, applies its facts: one statement. The
-- audit row is inserted with ON CONFLICT DO NOTHING and stamped processed (the facts are applied in the same
-- transaction); only the call that inserted it goes on, so a concurrent redelivery waits on the primary key and
-- answers 'duplicate'. p_trim_keep (Xcode/LocalTesting notifications, which anyone can sign) deletes the project's
-- such rows beyond the newest p_trim_keep. With p_apply_facts (NotificationRules.effect, decided by the caller), the
-- nested transaction (t_transaction_id NULL: none) is recorded first, binding no user — it may create the purchase
-- and adopt pending renewal info — then the renewal info (r_signed_date NULL: none). A conflicting transaction
-- raises BRTC1 and nothing, not even the notification, is stored. p_source: notification (delivered to the
-- webhook) or reconcile (recovered from Notification History). Returns 'processed' or 'duplicate'.
CREATE OR REPLACE FUNCTION bouncer_record_notification(
    p_project_id uuid, p_notification_uuid uuid, p_type text, p_subtype text, p_original_transaction_id text,
    p_environment text, p_signed_date timestamptz, p_payload jsonb, p_trim_keep bigint, p_apply_facts boolean,
    t_transaction_id text, t_original_transaction_id text, t_product_id text, t_type text, t_environment text,
    t_bundle_id text, t_purchase_date timestamptz, t_original_purchase_date timestamptz, t_expires_date timestamptz,
    t_revocation_date timestamptz, t_revocation_reason int, t_app_account_token uuid, t_ownership_type text,
    t_signed_date timestamptz, t_payload jsonb,
    r_original_transaction_id text, r_product_id text, r_auto_renew_product_id text, r_auto_renew_status int,
    r_expiration_intent int, r_grace_period_expires_date timestamptz, r_is_in_billing_retry boolean,
    r_price_increase_status int, r_offer_type int, r_offer_identifier text, r_renewal_date timestamptz,
    r_environment text, r_signed_date timestamptz, r_payload jsonb, r_eligible_win_back_offer_ids text[],
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
                r_environment, r_signed_date, r_payload, r_eligible_win_back_offer_ids, p_now);
        END IF;
    END IF;
    RETURN 'processed';
END;
$$;
