-- Proceeds of a price after Apple's commission (issue 26, README "Money"): price − round(price × percent / 100),
-- milli-units, rounded half away from zero once, at the commission. Swift twin: Domain/Money.swift
-- (Money.proceeds), held equal by StorageTests.MoneyRulesTests.
CREATE OR REPLACE FUNCTION bouncer_money_proceeds(p_price_milli bigint, p_commission_percent int) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT p_price_milli - round(p_price_milli::numeric * p_commission_percent / 100)::bigint
$$;
