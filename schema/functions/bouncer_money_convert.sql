-- An amount in milli-units at a rate (reporting units per unit of the amount's currency): round(amount × rate), half
-- away from zero, once per amount. Swift twin: Money.convert.
CREATE OR REPLACE FUNCTION bouncer_money_convert(p_amount_milli bigint, p_rate numeric) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT round(p_amount_milli::numeric * p_rate)::bigint
$$;
