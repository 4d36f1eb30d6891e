-- realized_ltv's amounts (schema/0086) of revenue_transactions rows, p_signs[i] the weight of row i (NULL: 1): each row
-- with a price is a sale on its purchase day and, when refunded, a refund on its refund day (refund_at its instant;
-- '-infinity' for sales), with the commission tier outside the Small Business Program as revenue_days keeps it.
-- Two scans of the array, not a join with the two kinds: a join can only be a nested loop, which a caller's
-- `enable_nestloop = off` priced at the planner's disable cost, and that cost turned JIT compilation on (a second per
-- call for a one-row batch).
CREATE OR REPLACE FUNCTION bouncer_revenue_ltv_entries(p_rows revenue_transactions[], p_signs int[])
RETURNS TABLE (environment text, original_transaction_id text, transaction_id text, currency text,
    purchase_date timestamptz, kind smallint, day date, price_milli bigint, tier int, refund_milli_percent int,
    refund_at timestamptz, n int)
LANGUAGE sql IMMUTABLE AS $$
    SELECT r.environment, r.original_transaction_id, r.transaction_id, r.currency, r.purchase_date, 0::smallint,
        (r.purchase_date AT TIME ZONE 'UTC')::date, r.price_milli,
        bouncer_money_commission(false, r.type = 'Auto-Renewable Subscription', r.paid_days_before), 0,
        '-infinity'::timestamptz, COALESCE(p_signs[r.ordinality], 1)
    FROM unnest(p_rows) WITH ORDINALITY AS r
    WHERE r.price_milli > 0
    UNION ALL
    SELECT r.environment, r.original_transaction_id, r.transaction_id, r.currency, r.purchase_date, 1::smallint,
        (r.refund_date AT TIME ZONE 'UTC')::date, r.price_milli,
        bouncer_money_commission(false, r.type = 'Auto-Renewable Subscription', r.paid_days_before),
        r.refund_milli_percent, r.refund_date, COALESCE(p_signs[r.ordinality], 1)
    FROM unnest(p_rows) WITH ORDINALITY AS r
    WHERE r.price_milli > 0 AND r.refund_milli_percent > 0 AND r.refund_date IS NOT NULL
$$;
