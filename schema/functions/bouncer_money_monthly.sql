-- A subscription transaction's monthly price (MRR's share, Swift twin: Money.monthly): a period of at most 10 days
-- is weekly (× 52 / 12); a longer one is n months, n = its days / 30.4375 rounded (at least 1), so a month, a
-- quarter, a year (÷ 12) each count what they bill per month, and a 12-month-commitment plan billed monthly counts
-- its monthly price. Rounded half away from zero to the milli-unit.
-- One expression, no FROM: the planner inlines it into the calling statement. With a FROM (`… FROM (SELECT … AS
-- days) d`) every call ran as its own SQL function, parsed and planned again at each call from a PL/pgSQL statement
-- (bouncer_revenue_values_sync's spans: ~170-225 µs of PostgreSQL per POST under load, `wp4`).
CREATE OR REPLACE FUNCTION bouncer_money_monthly(p_price_milli bigint, p_purchase_date timestamptz,
    p_expires_date timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN round(extract(epoch FROM p_expires_date - p_purchase_date) / 86400) <= 10
        THEN round(p_price_milli::numeric * 52 / 12)::bigint
        ELSE round(p_price_milli::numeric
            / GREATEST(round(round(extract(epoch FROM p_expires_date - p_purchase_date) / 86400) / 30.4375), 1))::bigint
    END
$$;
