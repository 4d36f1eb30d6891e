-- Brings revenue_transactions (schema/0062) up to date for consumed log rows (p_changes: a JSON array of
-- {"environment", "original_transaction_id", "tx"}; called by bouncer_overview_roll_up, and by the deriver before it
-- writes a batch's events). Each purchase is rolled up from its earliest changed transaction (tx's old and new
-- purchase dates; tx {"revenue": "all"}, 0062's backfill: all of it), continuing from the row before it, so a renewal
-- appended at the end writes one row. Rows are upserted with their current facts (an unchanged row is not written):
-- a replay, or a crash between batches, changes nothing. Never in the receipt's transaction. A trial's `converted`
-- (schema/0077) is set after the purchase's rows, for its trials; every row written or removed moves revenue_days
-- (schema/0072) by bouncer_revenue_days_move, here rather than in a trigger (schema/0078), and each purchase's runs of
-- paid service follow its rows (bouncer_revenue_runs_sync, schema/0078).
--
-- The rows: transactions with a price, and free trials; not family-shared ones (the organizer paid). Apple's one-year
-- rule (paid_days_before): paid service accumulates per subscription group (upgrades, downgrades and crossgrades
-- keep the original transaction id, so the purchase is the group), without free trials; a fully refunded period
-- accrues nothing, a prorated one (access kept) all of it; a paid period that begins more than 60 days after every
-- earlier one ended starts the count over.
CREATE OR REPLACE FUNCTION bouncer_revenue_roll_up(p_project_id uuid, p_changes jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    g record;
    t transactions;
    v_old revenue_transactions;
    v_new revenue_transactions;
    v_ids text[];
    v_carry bigint;
    v_ended timestamptz;
    v_trial boolean;
    v_refunded int;
    v_paid_end timestamptz;
    v_ms bigint;
BEGIN
    IF p_changes IS NULL THEN
        RETURN;
    END IF;
    FOR g IN
        SELECT e.environment, e.original_transaction_id AS original_id, min(CASE
            WHEN e.tx ? 'revenue' THEN '-infinity'::timestamptz
            WHEN jsonb_typeof(e.tx -> 'old') = 'object' OR jsonb_typeof(e.tx -> 'new') = 'object'
            THEN LEAST(COALESCE((e.tx -> 'old' ->> 'purchase_date')::timestamptz, 'infinity'),
                       COALESCE((e.tx -> 'new' ->> 'purchase_date')::timestamptz, 'infinity')) END) AS d0
        FROM jsonb_to_recordset(p_changes) e (environment text, original_transaction_id text, tx jsonb)
        WHERE e.original_transaction_id IS NOT NULL
        GROUP BY 1, 2
    LOOP
        CONTINUE WHEN g.d0 IS NULL;
        v_carry := 0;
        v_ended := NULL;
        SELECT v.paid_ms_before + v.paid_ms, v.ended_max INTO v_carry, v_ended
        FROM revenue_transactions v
        WHERE v.project_id = p_project_id AND v.original_transaction_id = g.original_id
          AND v.purchase_date < g.d0 AND v.environment = g.environment
        ORDER BY v.purchase_date DESC LIMIT 1;
        v_carry := COALESCE(v_carry, 0);
        -- The ids from the index alone (transactions_original_idx includes them and the purchase date), by its whole
        -- key: without the environment it was read by the project alone, every entry of the project's per call.
        SELECT array_agg(i.transaction_id) INTO v_ids FROM transactions i
        WHERE i.project_id = p_project_id AND i.environment = g.environment
          AND i.original_transaction_id = g.original_id AND i.purchase_date >= g.d0;
        CONTINUE WHEN v_ids IS NULL;
        FOR t IN
            SELECT * FROM transactions x
            WHERE x.project_id = p_project_id AND x.transaction_id = ANY (v_ids) AND x.environment = g.environment
            ORDER BY x.purchase_date, x.transaction_id
        LOOP
            IF NOT ((t.price_milli IS NOT NULL OR t.offer_discount_type = 'FREE_TRIAL')
                    AND t.ownership_type IS DISTINCT FROM 'FAMILY_SHARED') THEN
                DELETE FROM revenue_transactions v WHERE v.project_id = p_project_id
                  AND v.environment = g.environment AND v.transaction_id = t.transaction_id
                RETURNING v.* INTO v_old;
                IF FOUND THEN
                    PERFORM bouncer_revenue_days_move(v_old, -1);
                END IF;
                CONTINUE;
            END IF;
            v_trial := COALESCE(t.offer_discount_type = 'FREE_TRIAL', false);
            v_refunded := bouncer_money_refund_share(COALESCE(t.revocation_date,
                CASE WHEN t.revocation_type IS NOT NULL THEN t.purchase_date END), t.revocation_type,
                t.revocation_percentage);
            v_paid_end := CASE WHEN t.type = 'Auto-Renewable Subscription' AND NOT v_trial
                    AND COALESCE(t.price_milli, 0) > 0 AND t.expires_date IS NOT NULL AND v_refunded < 100000
                THEN GREATEST(LEAST(t.expires_date, COALESCE(t.revocation_date, t.expires_date)), t.purchase_date) END;
            IF v_paid_end IS NOT NULL AND (v_ended IS NULL OR t.purchase_date > v_ended + interval '60 days') THEN
                v_carry := 0;
            END IF;
            v_ms := COALESCE(round(extract(epoch FROM v_paid_end - t.purchase_date) * 1000)::bigint, 0);
            IF v_paid_end IS NOT NULL THEN
                v_ended := GREATEST(v_ended, v_paid_end);
            END IF;
            -- The row it replaces, to move revenue_days (schema/0078) out of it when the upsert writes.
            SELECT v.* INTO v_old FROM revenue_transactions v WHERE v.project_id = p_project_id
              AND v.environment = t.environment AND v.transaction_id = t.transaction_id;
            INSERT INTO revenue_transactions AS v (project_id, environment, transaction_id, original_transaction_id,
                product_id, type, storefront, currency, price_milli, trial, renewal, purchase_date, expires_date,
                revocation_date, refund_date, refund_milli_percent, paid_days_before, paid_ms_before, paid_ms,
                ended_max)
            VALUES (p_project_id, t.environment, t.transaction_id, t.original_transaction_id, t.product_id, t.type,
                t.payload ->> 'storefront', COALESCE(t.currency, ''), COALESCE(t.price_milli, 0), v_trial,
                COALESCE(t.is_renewal, false), t.purchase_date, t.expires_date, t.revocation_date,
                CASE WHEN v_refunded > 0 THEN COALESCE(t.revocation_date,
                    CASE WHEN jsonb_typeof(t.payload -> 'revocationDate') = 'number'
                    THEN to_timestamp((t.payload ->> 'revocationDate')::numeric / 1000) END) END,
                v_refunded, (v_carry / 86400000)::int, v_carry, v_ms, v_ended)
            ON CONFLICT (project_id, environment, transaction_id) DO UPDATE SET
                original_transaction_id = EXCLUDED.original_transaction_id, product_id = EXCLUDED.product_id,
                type = EXCLUDED.type, storefront = EXCLUDED.storefront, currency = EXCLUDED.currency,
                price_milli = EXCLUDED.price_milli, trial = EXCLUDED.trial, renewal = EXCLUDED.renewal,
                purchase_date = EXCLUDED.purchase_date, expires_date = EXCLUDED.expires_date,
                revocation_date = EXCLUDED.revocation_date, refund_date = EXCLUDED.refund_date,
                refund_milli_percent = EXCLUDED.refund_milli_percent, paid_days_before = EXCLUDED.paid_days_before,
                paid_ms_before = EXCLUDED.paid_ms_before, paid_ms = EXCLUDED.paid_ms, ended_max = EXCLUDED.ended_max
            WHERE (v.original_transaction_id, v.product_id, v.type, v.storefront, v.currency, v.price_milli, v.trial,
                    v.renewal, v.purchase_date, v.expires_date, v.revocation_date, v.refund_date,
                    v.refund_milli_percent, v.paid_days_before, v.paid_ms_before, v.paid_ms, v.ended_max)
                IS DISTINCT FROM (EXCLUDED.original_transaction_id, EXCLUDED.product_id, EXCLUDED.type,
                    EXCLUDED.storefront, EXCLUDED.currency, EXCLUDED.price_milli, EXCLUDED.trial, EXCLUDED.renewal,
                    EXCLUDED.purchase_date, EXCLUDED.expires_date, EXCLUDED.revocation_date, EXCLUDED.refund_date,
                    EXCLUDED.refund_milli_percent, EXCLUDED.paid_days_before, EXCLUDED.paid_ms_before,
                    EXCLUDED.paid_ms, EXCLUDED.ended_max)
            RETURNING v.* INTO v_new;
            IF v_new.project_id IS NOT NULL THEN
                IF v_old.project_id IS NOT NULL THEN
                    PERFORM bouncer_revenue_days_move(v_old, -1);
                END IF;
                PERFORM bouncer_revenue_days_move(v_new, 1);
            END IF;
            v_carry := v_carry + v_ms;
        END LOOP;
        -- trial_conversion's fact (schema/0077): each trial of the purchase converted when a paid period begins at or
        -- after it. Its rows just changed, so its trials are set again (the partial index: a purchase without a trial
        -- reads one index page); only a changed value is written.
        UPDATE revenue_transactions v SET converted = NOT v.converted
        WHERE v.project_id = p_project_id AND v.original_transaction_id = g.original_id
          AND v.environment = g.environment AND v.trial
          AND v.converted IS DISTINCT FROM EXISTS (SELECT 1 FROM revenue_transactions w
              WHERE w.project_id = p_project_id AND w.original_transaction_id = g.original_id
                AND w.environment = g.environment AND NOT w.trial AND w.price_milli > 0
                AND w.purchase_date >= v.purchase_date);
        -- The purchase's runs of paid service and their days (schema/0078), from the rows just written.
        PERFORM bouncer_revenue_runs_sync(p_project_id, g.environment, g.original_id);
        PERFORM bouncer_revenue_values_sync(p_project_id, g.environment, g.original_id, g.d0);
    END LOOP;
END;
$$;
