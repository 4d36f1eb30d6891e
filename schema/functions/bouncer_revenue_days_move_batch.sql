-- Moves revenue_days (schema/0072) by a batch of the project's revenue_transactions rows, p_signs[i] = +1 for a row
-- written, −1 for the row it replaced or a row removed: each row's sale (by purchase day) and, when refunded, its
-- refund (by refund day), summed per day row first, so one statement writes each day row once (a batch's renewals
-- of one day and price share a row: moved one by one, that row took a new version per renewal in one transaction);
-- a net change of zero writes nothing, a count back to zero removes its row. The commission tier is
-- bouncer_money_commission's outside the Small Business Program (the charts apply the program's 15 % when the project
-- is in it). Called by bouncer_revenue_roll_up once per batch (schema/0078: an explicit step, no trigger), so
-- revenue_days equals what revenue_transactions holds; never in the receipt's transaction.
CREATE OR REPLACE FUNCTION bouncer_revenue_days_move_batch(p_project_id uuid, p_rows revenue_transactions[],
    p_signs int[]) RETURNS void
-- A batch's purchases are few of the project's: every statement probes them by index. The generic plans the deriver
-- uses cannot see which purchases an array names, and hashed the project's whole table against them instead.
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    v_days date[];
BEGIN
    WITH m AS (
        SELECT CASE WHEN k.kind = 0 THEN (r.purchase_date AT TIME ZONE 'UTC')::date
                ELSE (r.refund_date AT TIME ZONE 'UTC')::date END AS day,
            r.environment, r.product_id, COALESCE(r.storefront, '') AS storefront, r.currency, k.kind::smallint AS kind,
            r.price_milli, bouncer_money_commission(false, r.type = 'Auto-Renewable Subscription', r.paid_days_before)
                AS tier,
            CASE WHEN k.kind = 0 THEN 0 ELSE r.refund_milli_percent END AS pct,
            p_signs[r.ordinality] AS n,
            CASE WHEN k.kind = 0 AND r.refund_milli_percent > 0 THEN p_signs[r.ordinality] ELSE 0 END AS refunded
        FROM unnest(p_rows) WITH ORDINALITY AS r
        CROSS JOIN (VALUES (0), (1)) k (kind)
        WHERE r.price_milli > 0 AND r.project_id = p_project_id
          AND (k.kind = 0 OR (r.refund_milli_percent > 0 AND r.refund_date IS NOT NULL))
    ), up AS (
        INSERT INTO revenue_days AS d (project_id, day, environment, product_id, storefront, currency, kind,
            price_milli, tier, refund_milli_percent, n, refunded)
        SELECT p_project_id, m.day, m.environment, m.product_id, m.storefront, m.currency, m.kind, m.price_milli,
            m.tier, m.pct, sum(m.n), sum(m.refunded)
        FROM m
        GROUP BY m.day, m.environment, m.product_id, m.storefront, m.currency, m.kind, m.price_milli, m.tier, m.pct
        HAVING sum(m.n) <> 0 OR sum(m.refunded) <> 0
        ON CONFLICT (project_id, day, environment, product_id, storefront, currency, kind, price_milli, tier,
            refund_milli_percent)
        DO UPDATE SET n = d.n + EXCLUDED.n, refunded = d.refunded + EXCLUDED.refunded
        RETURNING d.day, d.n, d.refunded)
    SELECT array_agg(up.day) INTO v_days FROM up WHERE up.n = 0 AND up.refunded = 0;
    -- (No other row is ever zero: those days' zero rows are exactly the ones just moved there.)
    IF v_days IS NOT NULL THEN
        DELETE FROM revenue_days d WHERE d.project_id = p_project_id AND d.day = ANY (v_days) AND d.n = 0
          AND d.refunded = 0;
    END IF;
END;
$$;
