-- The overview's events of log rows (schema/0035): p_changes is a JSON array of {"environment", "tx"}, each tx's
-- old fields counted −1 and new ones +1. One row per event: a transaction's start (purchase date), end (the earlier
-- of expiry and revocation), stop (the end, or the start when it ends before it) and refund (revocation); a
-- purchase's expiry. The only author of what each event counts: the deriver sums them into overview_days and
-- overview_instants (bouncer_overview_roll_up), the overview adds the pending rows' to them.
CREATE OR REPLACE FUNCTION bouncer_overview_events(p_changes jsonb)
RETURNS TABLE (environment text, at timestamptz, product_id text, currency text, starts int, start_subs int,
    new_purchases int, renewals int, priced int, revenue_milli numeric, ends int, end_subs int, stops int,
    stop_subs int, refunds int, expirations int, mrr_n int, mrr_milli numeric)
LANGUAGE sql STABLE AS $$
    SELECT e.environment, k.at, x.product_id, x.currency,
        CASE WHEN k.kind = 'start' AND y.lasting THEN v.sign ELSE 0 END,
        CASE WHEN k.kind = 'start' AND y.lasting AND x.expires_date IS NOT NULL THEN v.sign ELSE 0 END,
        CASE WHEN k.kind = 'start' AND NOT x.renewal THEN v.sign ELSE 0 END,
        CASE WHEN k.kind = 'start' AND x.renewal THEN v.sign ELSE 0 END,
        CASE WHEN k.kind = 'start' AND x.price_milli IS NOT NULL THEN v.sign ELSE 0 END,
        CASE WHEN k.kind = 'start' THEN v.sign * COALESCE(x.price_milli, 0) ELSE 0 END::numeric,
        CASE WHEN k.kind = 'end' AND y.lasting THEN v.sign ELSE 0 END,
        CASE WHEN k.kind = 'end' AND y.lasting AND x.expires_date IS NOT NULL THEN v.sign ELSE 0 END,
        CASE WHEN k.kind = 'stop' AND y.lasting THEN v.sign ELSE 0 END,
        CASE WHEN k.kind = 'stop' AND y.lasting AND x.expires_date IS NOT NULL THEN v.sign ELSE 0 END,
        CASE WHEN k.kind = 'refund' THEN v.sign ELSE 0 END,
        0,
        CASE WHEN y.mrr IS NULL THEN 0 WHEN k.kind = 'start' THEN v.sign WHEN k.kind = 'stop' THEN -v.sign ELSE 0 END,
        CASE WHEN y.mrr IS NULL THEN 0 WHEN k.kind = 'start' THEN v.sign * y.mrr
             WHEN k.kind = 'stop' THEN -v.sign * y.mrr ELSE 0 END
    FROM jsonb_to_recordset(COALESCE(p_changes, '[]')) e (environment text, tx jsonb)
    CROSS JOIN LATERAL (VALUES (-1, bouncer_overview_object(e.tx -> 'old')), (1, bouncer_overview_object(e.tx -> 'new')))
        v (sign, f)
    CROSS JOIN LATERAL jsonb_to_record(v.f) x (product_id text, type text, currency text, price_milli bigint,
        renewal boolean, purchase_date timestamptz, expires_date timestamptz, revocation_date timestamptz)
    -- lasting: active from its start (consumables never are); mrr: its price per 30 days, with a price and currency.
    CROSS JOIN LATERAL (SELECT x.type <> 'Consumable' AS lasting, LEAST(x.expires_date, x.revocation_date) AS ends,
        CASE WHEN x.expires_date IS NOT NULL AND x.currency IS NOT NULL AND x.price_milli IS NOT NULL
            THEN x.price_milli::numeric * 2592000
                 / GREATEST(extract(epoch FROM x.expires_date - x.purchase_date), 86400) END AS mrr) y
    CROSS JOIN LATERAL (VALUES ('start', x.purchase_date), ('end', y.ends),
        ('stop', CASE WHEN y.ends IS NOT NULL THEN GREATEST(y.ends, x.purchase_date) END),
        ('refund', x.revocation_date)) k (kind, at)
    WHERE v.f IS NOT NULL AND k.at IS NOT NULL
    UNION ALL
    SELECT e.environment, x.expires_date, x.product_id, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, v.sign, 0, 0
    FROM jsonb_to_recordset(COALESCE(p_changes, '[]')) e (environment text, tx jsonb)
    CROSS JOIN LATERAL (VALUES (-1, bouncer_overview_object(e.tx -> 'p_old')),
        (1, bouncer_overview_object(e.tx -> 'p_new'))) v (sign, f)
    CROSS JOIN LATERAL jsonb_to_record(v.f) x (product_id text, expires_date timestamptz)
    WHERE v.f IS NOT NULL
$$;
