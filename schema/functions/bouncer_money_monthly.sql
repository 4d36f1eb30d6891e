-- A subscription transaction's monthly price (MRR's share, Swift twin: Money.monthly): a period of at most 10 days
-- is weekly (× 52 / 12); a longer one is n months, n = its days / 30.4375 rounded (at least 1), so a month, a
-- quarter, a year (÷ 12) each count what they bill per month, and a 12-month-commitment plan billed monthly counts
-- its monthly price. Rounded half away from zero to the milli-unit.
CREATE OR REPLACE FUNCTION bouncer_money_monthly(p_price_milli bigint, p_purchase_date timestamptz,
    p_expires_date timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN d.days <= 10 THEN round(p_price_milli::numeric * 52 / 12)::bigint
        ELSE round(p_price_milli::numeric / GREATEST(round(d.days / 30.4375), 1))::bigint
    END
    FROM (SELECT round(extract(epoch FROM p_expires_date - p_purchase_date) / 86400) AS days) d
$$;
