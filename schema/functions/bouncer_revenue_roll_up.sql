-- Brings revenue_transactions (schema/0062) up to date for consumed log rows (p_changes: a JSON array of
-- {"environment", "original_transaction_id", "tx"}; called by bouncer_overview_roll_up, and by the deriver before it
-- writes a batch's events). Each purchase is rolled up from its earliest changed transaction (tx's old and new
-- purchase dates; tx {"revenue": "all"}, 0062's backfill: all of it), continuing from the row before it, so a renewal
-- appended at the end writes one row. One statement computes the batch's rows, then one removes and one upserts them
-- with their current facts (an unchanged row is not written): a replay, or a crash between batches, changes nothing.
-- (Until session 18 a PL/pgSQL loop, a statement per purchase and per row: RevenueRollUpOracleTests keeps it and
-- compares.) Never in the receipt's transaction. Then, once per batch
-- for the purchases whose rows changed (schema/0078: explicit statements, no trigger): revenue_days (schema/0072)
-- moved by every row written or removed (bouncer_revenue_days_move_batch), each trial's `converted` (schema/0077) set
-- again, and the runs of paid service brought up to date (bouncer_revenue_runs_sync, incremental for renewals
-- appended at the end), the changed purchases' spans of MRR (bouncer_revenue_values_sync, schema/0085), and the
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
    -- The batch's rows to write (new or changed), replaced (changed or removed) and removed (no longer revenue); its
    -- revenue_days moves (rows written +1, the rows they replaced or removed −1); the purchases to bring up to date,
    -- from their earliest changed purchase date.
    v_written revenue_transactions[];
    v_replaced revenue_transactions[];
    v_removed revenue_transactions[];
    v_moved revenue_transactions[];
    v_signs int[];
    v_envs text[];
    v_ids text[];
    v_froms timestamptz[];
    v_appended boolean[];
    -- The batch's spans of MRR written (bouncer_revenue_values_sync): the moves of their days and movement.
    v_sync record;
BEGIN
    IF p_changes IS NULL THEN
        RETURN;
    END IF;
    -- One statement for the batch's rows: each purchase (g) from its earliest changed transaction (d0), with the row
    -- before d0 it continues from (b: its paid service carried, its running end), each transaction from d0 on with
    -- the row it has (v, NULL: none), by transactions_original_idx's whole key. The carry is a running sum per
    -- purchase, started over by a paid period that begins more than 60 days after the running end of every earlier
    -- one: a run of paid service (r.run) is the count of such starts up to the row, and a row carries the paid
    -- service of its run's rows before it (plus b's, in the purchase's first run).
    WITH g AS MATERIALIZED (
        SELECT e.environment, e.original_transaction_id AS original_id, min(CASE
            WHEN e.tx ? 'revenue' THEN '-infinity'::timestamptz
            WHEN jsonb_typeof(e.tx -> 'old') = 'object' OR jsonb_typeof(e.tx -> 'new') = 'object'
            THEN LEAST(COALESCE((e.tx -> 'old' ->> 'purchase_date')::timestamptz, 'infinity'),
                       COALESCE((e.tx -> 'new' ->> 'purchase_date')::timestamptz, 'infinity')) END) AS d0
        FROM jsonb_to_recordset(p_changes) e (environment text, original_transaction_id text, tx jsonb)
        WHERE e.original_transaction_id IS NOT NULL
        GROUP BY 1, 2
    ), t AS (
        SELECT g.original_id, g.d0, b.carry AS carry0, b.ended_max AS ended0, x.*, v AS old,
            v.project_id IS NOT NULL AS had
        FROM g
        LEFT JOIN LATERAL (SELECT w.paid_ms_before + w.paid_ms AS carry, w.ended_max FROM revenue_transactions w
            WHERE w.project_id = p_project_id AND w.original_transaction_id = g.original_id
              AND w.purchase_date < g.d0 AND w.environment = g.environment
            ORDER BY w.purchase_date DESC LIMIT 1) b ON true
        CROSS JOIN LATERAL (SELECT x.environment, x.transaction_id, x.original_transaction_id, x.product_id, x.type,
                x.price_milli, x.currency, x.ownership_type, x.is_renewal, x.purchase_date, x.expires_date,
                x.revocation_date, x.payload ->> 'storefront' AS storefront,
                CASE WHEN jsonb_typeof(x.payload -> 'revocationDate') = 'number'
                    THEN to_timestamp((x.payload ->> 'revocationDate')::numeric / 1000) END AS payload_revoked,
                -- Revenue: a price or a free trial, not family-shared (the organizer paid). (An unpriced period
                -- without an offer is not: the loop before session 18 read NULL there as revenue, a row of price 0.)
                (x.price_milli IS NOT NULL OR x.offer_discount_type IS NOT DISTINCT FROM 'FREE_TRIAL')
                    AND x.ownership_type IS DISTINCT FROM 'FAMILY_SHARED' AS counted,
                COALESCE(x.offer_discount_type = 'FREE_TRIAL', false) AS trial,
                bouncer_money_refund_share(COALESCE(x.revocation_date,
                    CASE WHEN x.revocation_type IS NOT NULL THEN x.purchase_date END), x.revocation_type,
                    x.revocation_percentage) AS refunded
            FROM transactions x
            WHERE x.project_id = p_project_id AND x.environment = g.environment
              AND x.original_transaction_id = g.original_id AND x.purchase_date >= g.d0) x
        LEFT JOIN revenue_transactions v ON v.project_id = p_project_id AND v.environment = x.environment
            AND v.transaction_id = x.transaction_id
        WHERE g.d0 IS NOT NULL
    ), p AS (
        -- Each counted row's paid service: its period up to its expiry or revocation, for a paid subscription
        -- period not fully refunded.
        SELECT t.*, CASE WHEN t.counted AND t.type = 'Auto-Renewable Subscription' AND NOT t.trial
                    AND COALESCE(t.price_milli, 0) > 0 AND t.expires_date IS NOT NULL AND t.refunded < 100000
                THEN GREATEST(LEAST(t.expires_date, COALESCE(t.revocation_date, t.expires_date)), t.purchase_date)
                END AS paid_end
        FROM t
    ), e AS (
        SELECT p.*, COALESCE(round(extract(epoch FROM p.paid_end - p.purchase_date) * 1000)::bigint, 0) AS ms,
            GREATEST(p.ended0, max(p.paid_end) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
                AS ended_before,
            GREATEST(p.ended0, max(p.paid_end) OVER (w ROWS UNBOUNDED PRECEDING)) AS ended
        FROM p
        WINDOW w AS (PARTITION BY p.environment, p.original_id ORDER BY p.purchase_date, p.transaction_id)
    ), r AS (
        SELECT e.*, sum(CASE WHEN e.paid_end IS NOT NULL AND (e.ended_before IS NULL
                    OR e.purchase_date > e.ended_before + interval '60 days') THEN 1 ELSE 0 END)
                OVER (PARTITION BY e.environment, e.original_id ORDER BY e.purchase_date, e.transaction_id
                    ROWS UNBOUNDED PRECEDING) AS run
        FROM e
    ), c AS (
        SELECT r.*, (CASE WHEN r.run = 0 THEN COALESCE(r.carry0, 0) ELSE 0 END
                + COALESCE(sum(r.ms) OVER (PARTITION BY r.environment, r.original_id, r.run
                    ORDER BY r.purchase_date, r.transaction_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0))
                ::bigint AS carry
        FROM r
    ), n AS (
        SELECT c.environment, c.original_id, c.d0, c.counted, c.had, c.old,
            CASE WHEN c.counted THEN ROW(p_project_id, c.environment, c.transaction_id, c.original_transaction_id,
                c.product_id, c.type, c.storefront, COALESCE(c.currency, ''), COALESCE(c.price_milli, 0), c.trial,
                COALESCE(c.is_renewal, false), c.purchase_date, c.expires_date, c.revocation_date,
                CASE WHEN c.refunded > 0 THEN COALESCE(c.revocation_date, c.payload_revoked) END,
                c.refunded, (c.carry / 86400000)::int, c.carry, c.ms, c.ended,
                -- converted: kept here, set per purchase below.
                COALESCE((c.old).converted, false))::revenue_transactions END AS new
        FROM c
    ), d AS (
        -- The rows that change: removed (no longer revenue) or written (new, or facts changed; an unchanged row is
        -- not written, so a replay writes nothing).
        SELECT n.* FROM n WHERE (n.had AND NOT n.counted) OR (n.counted AND n.old IS DISTINCT FROM n.new)
    )
    SELECT ARRAY(SELECT d.new FROM d WHERE d.counted), ARRAY(SELECT d.old FROM d WHERE d.had),
        ARRAY(SELECT d.old FROM d WHERE NOT d.counted),
        array_agg(k.environment), array_agg(k.original_id), array_agg(k.d0), array_agg(k.appended)
    INTO v_written, v_replaced, v_removed, v_envs, v_ids, v_froms, v_appended
    -- The purchases whose rows changed (appended: rows added, none replaced or removed); and one asked for whole (tx
    -- {"revenue": "all"}: 0078's backfill of the runs over rows already derived) even when none of its rows changed.
    FROM (SELECT d.environment, d.original_id, d.d0, bool_and(NOT d.had) AND d.d0 > '-infinity' AS appended FROM d
            GROUP BY d.environment, d.original_id, d.d0
        UNION SELECT g.environment, g.original_id, g.d0, false FROM g WHERE g.d0 = '-infinity') k;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;
    -- Rows no longer revenue removed, the rest written.
    IF cardinality(v_removed) > 0 THEN
        DELETE FROM revenue_transactions v USING unnest(v_removed) o
        WHERE v.project_id = p_project_id AND v.environment = o.environment AND v.transaction_id = o.transaction_id;
    END IF;
    INSERT INTO revenue_transactions AS v SELECT n.* FROM unnest(v_written) n
    ON CONFLICT (project_id, environment, transaction_id) DO UPDATE SET
        original_transaction_id = EXCLUDED.original_transaction_id, product_id = EXCLUDED.product_id,
        type = EXCLUDED.type, storefront = EXCLUDED.storefront, currency = EXCLUDED.currency,
        price_milli = EXCLUDED.price_milli, trial = EXCLUDED.trial, renewal = EXCLUDED.renewal,
        purchase_date = EXCLUDED.purchase_date, expires_date = EXCLUDED.expires_date,
        revocation_date = EXCLUDED.revocation_date, refund_date = EXCLUDED.refund_date,
        refund_milli_percent = EXCLUDED.refund_milli_percent, paid_days_before = EXCLUDED.paid_days_before,
        paid_ms_before = EXCLUDED.paid_ms_before, paid_ms = EXCLUDED.paid_ms, ended_max = EXCLUDED.ended_max;
    -- revenue_days' moves: each replaced or removed row −1, each row written +1.
    v_moved := v_replaced || v_written;
    v_signs := array_fill(-1, ARRAY[cardinality(v_replaced)]) || array_fill(1, ARRAY[cardinality(v_written)]);
    -- The purchases' spans of MRR (schema/0085), from their rows just written, for the batch; their days moved below.
    SELECT * INTO v_sync FROM bouncer_revenue_values_sync(p_project_id, v_envs, v_ids, v_froms);
    -- Their spans' days and retention cohorts (schema/0085), from the spans just written.
    PERFORM bouncer_revenue_value_days_move(p_project_id, v_sync.value_days);
    PERFORM bouncer_revenue_movement_days_move(p_project_id, v_sync.movement_days);
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
    PERFORM bouncer_revenue_runs_sync(p_project_id, v_envs, v_ids, v_froms, v_appended);
END;
$$;
