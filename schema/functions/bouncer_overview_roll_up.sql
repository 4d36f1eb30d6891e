-- Adds consumed log rows to overview_days (schema/0035): p_changes is a JSON array of {"environment", "tx"} (rows
-- without tx omitted), each tx subtracted as old and added as new. Called in the transaction that deletes the rows.
CREATE OR REPLACE FUNCTION bouncer_overview_roll_up(p_project_id uuid, p_changes jsonb) RETURNS void
LANGUAGE sql VOLATILE AS $$
    INSERT INTO overview_days AS o (project_id, environment, day, product_id, currency, currency_null, starts,
        start_subs, new_purchases, renewals, priced, revenue_milli, ends, end_subs, refunds)
    SELECT p_project_id, e.environment, (k.at AT TIME ZONE 'UTC')::date, x.product_id, COALESCE(x.currency, ''),
        x.currency IS NULL,
        COALESCE(sum(v.sign) FILTER (WHERE k.kind = 'start' AND x.type <> 'Consumable'), 0),
        COALESCE(sum(v.sign) FILTER (WHERE k.kind = 'start' AND x.type <> 'Consumable'
                                       AND x.expires_date IS NOT NULL), 0),
        COALESCE(sum(v.sign) FILTER (WHERE k.kind = 'start' AND NOT x.renewal), 0),
        COALESCE(sum(v.sign) FILTER (WHERE k.kind = 'start' AND x.renewal), 0),
        COALESCE(sum(v.sign) FILTER (WHERE k.kind = 'start' AND x.price_milli IS NOT NULL), 0),
        COALESCE(sum(v.sign * x.price_milli) FILTER (WHERE k.kind = 'start'), 0),
        COALESCE(sum(v.sign) FILTER (WHERE k.kind = 'end' AND x.type <> 'Consumable'), 0),
        COALESCE(sum(v.sign) FILTER (WHERE k.kind = 'end' AND x.type <> 'Consumable'
                                       AND x.expires_date IS NOT NULL), 0),
        COALESCE(sum(v.sign) FILTER (WHERE k.kind = 'refund'), 0)
    FROM jsonb_to_recordset(COALESCE(p_changes, '[]')) e (environment text, tx jsonb)
    CROSS JOIN LATERAL (VALUES (-1, e.tx -> 'old'), (1, e.tx -> 'new')) v (sign, f)
    CROSS JOIN LATERAL jsonb_to_record(v.f) x (product_id text, type text, currency text, price_milli bigint,
        renewal boolean, purchase_date timestamptz, expires_date timestamptz, revocation_date timestamptz)
    CROSS JOIN LATERAL (VALUES ('start', x.purchase_date), ('end', LEAST(x.expires_date, x.revocation_date)),
        ('refund', x.revocation_date)) k (kind, at)
    WHERE v.f IS NOT NULL AND k.at IS NOT NULL
    GROUP BY 2, 3, 4, 5, 6
    ON CONFLICT (project_id, environment, day, product_id, currency, currency_null) DO UPDATE SET
        starts = o.starts + EXCLUDED.starts, start_subs = o.start_subs + EXCLUDED.start_subs,
        new_purchases = o.new_purchases + EXCLUDED.new_purchases, renewals = o.renewals + EXCLUDED.renewals,
        priced = o.priced + EXCLUDED.priced, revenue_milli = o.revenue_milli + EXCLUDED.revenue_milli,
        ends = o.ends + EXCLUDED.ends, end_subs = o.end_subs + EXCLUDED.end_subs, refunds = o.refunds + EXCLUDED.refunds
$$;
