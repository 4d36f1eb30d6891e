-- The tax included in a price at a storefront's rate in milli-percent (19 % is 19000; issue 26, README "Money"):
-- round(price × rate / (100000 + rate)), milli-units, half away from zero; 0 at a rate of 0 or less. Swift twin:
-- Money.tax, held equal by StorageTests.MoneyRulesTests.
CREATE OR REPLACE FUNCTION bouncer_money_tax(p_price_milli bigint, p_tax_milli_percent int) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_tax_milli_percent > 0
        THEN round(p_price_milli::numeric * p_tax_milli_percent / (100000 + p_tax_milli_percent))::bigint
        ELSE 0::bigint END
$$;
