-- Proceeds of a price after Apple's commission (issue 26, README "Money"): price − round(price × percent / 100),
-- milli-units, rounded half away from zero once, at the commission. Swift twin: Domain/Money.swift
-- (Money.proceeds), held equal by StorageTests.MoneyRulesTests.
CREATE OR REPLACE FUNCTION bouncer_money_proceeds(p_price_milli bigint, p_commission_percent int) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT p_price_milli - round(p_price_milli::numeric * p_commission_percent / 100)::bigint
$$;

-- After tax: Apple remits the tax included in the price (bouncer_money_tax, at the storefront's rate in milli-percent)
-- and takes its commission on the rest, so proceeds(price − tax, percent), each step rounded once. At a rate of 0, the
-- two-argument rule. Swift twin: Money.proceeds(priceMilli:commissionPercent:taxMilliPercent:).
CREATE OR REPLACE FUNCTION bouncer_money_proceeds(p_price_milli bigint, p_commission_percent int,
    p_tax_milli_percent int) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT bouncer_money_proceeds(p_price_milli - bouncer_money_tax(p_price_milli, p_tax_milli_percent),
        p_commission_percent)
$$;
