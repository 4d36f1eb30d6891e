-- Brings revenue_transactions (schema/0062) up to date for consumed log rows (p_changes: a JSON array of
-- {"environment", "original_transaction_id", "tx"}; called by bouncer_overview_roll_up, and by the deriver before it
-- writes a batch's events). Each purchase is rolled up from its earliest changed transaction (tx's old and new
-- purchase dates; tx {"revenue": "all"}, 0062's backfill: all of it), continuing from the row before it, so a renewal
-- appended at the end writes one row. Rows are upserted with their current facts (an unchanged row is not written):
-- a replay, or a crash between batches, changes nothing. Never in the receipt's transaction. Then, once per batch
-- for the purchases whose rows changed (schema/0078: explicit statements, no trigger): revenue_days (schema/0072)
-- moved by every row written or removed (bouncer_revenue_days_move_batch), each trial's `converted` (schema/0077) set
-- again, and the runs of paid service brought up to date (bouncer_revenue_runs_sync, incremental for renewals
-- appended at the end), per changed purchase its spans of MRR (bouncer_revenue_values_sync, schema/0085), and the
-- batch's days of those spans (bouncer_revenue_value_days_move), their movement (bouncer_revenue_movement_days_move,
-- schema/0087) and retention cohorts (bouncer_revenue_cohort_sync).
--
-- The rows: transactions with a price, and free trials; not family-shared ones (the organizer paid). Apple's one-year
-- rule (paid_days_before): paid service accumulates per subscription group (upgrades, downgrades and crossgrades
-- keep the original transaction id, so the purchase is the group), without free trials; a fully refunded period
-- accrues nothing, a prorated one (access kept) all of it; a paid period that begins more than 60 days after every
-- earlier one ended starts the count over.
CREATE OR REPLACE FUNCTION bouncer_revenue_roll_up(p_project_id uuid, p_changes jsonb) RETURNS void
-- A batch's purchases are few of the project's: every statement probes them by index. The generic plans the deriver
-- uses cannot see which purchases an array names, and hashed the project's whole table against them instead.
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    g record;
    t record;
    v_new revenue_transactions;
    v_carry bigint;
    v_ended timestamptz;
    v_trial boolean;
    v_refunded int;
    v_paid_end timestamptz;
    v_ms bigint;
    v_changed boolean;
    v_first boolean;
    -- The batch's revenue_days moves (rows written +1, the rows they replaced or removed −1) and the purchases
    -- whose rows changed, from their earliest changed purchase date.
    v_moved revenue_transactions[] := '{}';
    v_signs int[] := '{}';
    v_envs text[] := '{}';
    v_ids text[] := '{}';
    v_froms timestamptz[] := '{}';
    -- The batch's moves of revenue_value_days (each purchase's spans written: bouncer_revenue_values_sync).
    v_value_moves revenue_value_days[] := '{}';
    v_value_move revenue_value_days;
    -- And of revenue_movement_days (schema/0087), from the same spans.
    v_movement_moves revenue_movement_days[] := '{}';
    v_movement_move revenue_movement_days;
    v_sync record;
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
        v_changed := false;
        v_first := true;
        -- Each transaction with the row it has (NULL: none), by transactions_original_idx's whole key; on each the
        -- purchase's paid service before d0 (the row before it: one probe per statement, read at the first).
        FOR t IN
            SELECT b.carry, b.ended_max AS ended, x.environment, x.transaction_id, x.original_transaction_id,
                x.product_id, x.type, x.price_milli, x.currency, x.offer_discount_type, x.ownership_type, x.is_renewal,
                x.purchase_date, x.expires_date,
                x.revocation_date, x.revocation_type, x.revocation_percentage, x.payload ->> 'storefront' AS storefront,
                CASE WHEN jsonb_typeof(x.payload -> 'revocationDate') = 'number'
                    THEN to_timestamp((x.payload ->> 'revocationDate')::numeric / 1000) END AS payload_revoked,
                v.project_id IS NOT NULL AS had, v AS old
            FROM transactions x
            LEFT JOIN revenue_transactions v ON v.project_id = p_project_id AND v.environment = x.environment
                AND v.transaction_id = x.transaction_id
            LEFT JOIN (SELECT w.paid_ms_before + w.paid_ms AS carry, w.ended_max FROM revenue_transactions w
                WHERE w.project_id = p_project_id AND w.original_transaction_id = g.original_id
                  AND w.purchase_date < g.d0 AND w.environment = g.environment
                ORDER BY w.purchase_date DESC LIMIT 1) b ON true
            WHERE x.project_id = p_project_id AND x.environment = g.environment
              AND x.original_transaction_id = g.original_id AND x.purchase_date >= g.d0
            ORDER BY x.purchase_date, x.transaction_id
        LOOP
            IF v_first THEN
                v_carry := COALESCE(t.carry, 0);
                v_ended := t.ended;
                v_first := false;
            END IF;
            IF NOT ((t.price_milli IS NOT NULL OR t.offer_discount_type = 'FREE_TRIAL')
                    AND t.ownership_type IS DISTINCT FROM 'FAMILY_SHARED') THEN
                IF t.had THEN
                    DELETE FROM revenue_transactions v WHERE v.project_id = p_project_id
                      AND v.environment = g.environment AND v.transaction_id = t.transaction_id;
                    v_moved := v_moved || t.old;
                    v_signs := v_signs || -1;
                    v_changed := true;
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
            v_new := ROW(p_project_id, t.environment, t.transaction_id, t.original_transaction_id, t.product_id,
                t.type, t.storefront, COALESCE(t.currency, ''), COALESCE(t.price_milli, 0), v_trial,
                COALESCE(t.is_renewal, false), t.purchase_date, t.expires_date, t.revocation_date,
                CASE WHEN v_refunded > 0 THEN COALESCE(t.revocation_date, t.payload_revoked) END,
                v_refunded, (v_carry / 86400000)::int, v_carry, v_ms, v_ended,
                -- converted: kept here, set per purchase below.
                COALESCE((t.old).converted, false))::revenue_transactions;
            v_carry := v_carry + v_ms;
            -- An unchanged row is not written (a replay writes nothing).
            CONTINUE WHEN t.old IS NOT DISTINCT FROM v_new;
            INSERT INTO revenue_transactions AS v SELECT v_new.*
            ON CONFLICT (project_id, environment, transaction_id) DO UPDATE SET
                original_transaction_id = EXCLUDED.original_transaction_id, product_id = EXCLUDED.product_id,
                type = EXCLUDED.type, storefront = EXCLUDED.storefront, currency = EXCLUDED.currency,
                price_milli = EXCLUDED.price_milli, trial = EXCLUDED.trial, renewal = EXCLUDED.renewal,
                purchase_date = EXCLUDED.purchase_date, expires_date = EXCLUDED.expires_date,
                revocation_date = EXCLUDED.revocation_date, refund_date = EXCLUDED.refund_date,
                refund_milli_percent = EXCLUDED.refund_milli_percent, paid_days_before = EXCLUDED.paid_days_before,
                paid_ms_before = EXCLUDED.paid_ms_before, paid_ms = EXCLUDED.paid_ms, ended_max = EXCLUDED.ended_max;
            IF t.had THEN
                v_moved := v_moved || t.old;
                v_signs := v_signs || -1;
            END IF;
            v_moved := v_moved || v_new;
            v_signs := v_signs || 1;
            v_changed := true;
        END LOOP;
        -- A purchase asked for whole (tx {"revenue": "all"}: 0078's backfill of the runs over rows already derived)
        -- has its runs and trials brought up to date even when none of its rows changed.
        IF v_changed OR g.d0 = '-infinity' THEN
            v_envs := v_envs || g.environment;
            v_ids := v_ids || g.original_id;
            v_froms := v_froms || g.d0;
            -- The purchase's spans of MRR (schema/0085), from its rows just written; their days moved below.
            -- (Element by element: an append to the variable is in place, a concatenation copies the batch's.)
            SELECT * INTO v_sync FROM bouncer_revenue_values_sync(p_project_id, g.environment, g.original_id, g.d0);
            FOREACH v_value_move IN ARRAY v_sync.value_days LOOP
                v_value_moves := v_value_moves || v_value_move;
            END LOOP;
            FOREACH v_movement_move IN ARRAY v_sync.movement_days LOOP
                v_movement_moves := v_movement_moves || v_movement_move;
            END LOOP;
        END IF;
    END LOOP;
    IF cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;
    -- Their spans' days and retention cohorts (schema/0085), from the spans just written.
    PERFORM bouncer_revenue_value_days_move(p_project_id, v_value_moves);
    PERFORM bouncer_revenue_movement_days_move(p_project_id, v_movement_moves);
    PERFORM bouncer_revenue_cohort_sync(p_project_id, v_envs, v_ids, v_froms);
    PERFORM bouncer_revenue_days_move_batch(p_project_id, v_moved, v_signs);
    -- realized_ltv's cohorts (schema/0086), by the same moves.
    PERFORM bouncer_revenue_ltv_move(p_project_id, v_moved, v_signs);
    -- trial_conversion's fact (schema/0077): each trial of the changed purchases converted when a paid period begins
    -- at or after it (the partial index: a purchase without a trial reads one index page); only a changed value is
    -- written.
    UPDATE revenue_transactions v SET converted = NOT v.converted
    FROM unnest(v_envs, v_ids) AS k (env, original_id)
    WHERE v.project_id = p_project_id AND v.original_transaction_id = k.original_id AND v.environment = k.env
      AND v.trial
      AND v.converted IS DISTINCT FROM EXISTS (SELECT 1 FROM revenue_transactions w
          WHERE w.project_id = p_project_id AND w.original_transaction_id = k.original_id
            AND w.environment = k.env AND NOT w.trial AND w.price_milli > 0 AND w.purchase_date >= v.purchase_date);
    -- The purchases' runs of paid service and their days (schema/0078), from the rows just written.
    PERFORM bouncer_revenue_runs_sync(p_project_id, v_envs, v_ids, v_froms);
END;
$$;
