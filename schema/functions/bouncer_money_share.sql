-- The share of an amount refunded: round(amount × milli_percent / 100000), milli-units, half away from zero (Apple's
-- revocationPercentage is in milli-percent: 100000 is all of it). Swift twin: Money.share.
CREATE OR REPLACE FUNCTION bouncer_money_share(p_amount_milli bigint, p_milli_percent int) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT round(p_amount_milli::numeric * p_milli_percent / 100000)::bigint
$$;
