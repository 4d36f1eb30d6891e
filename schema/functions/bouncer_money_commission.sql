-- Apple's commission in percent (Swift twin: Money.commissionPercent): 15 for a project in the Small Business
-- Program, and for an auto-renewable subscription's transaction that begins after one year (365 days) of paid
-- service in its subscription group; else 30.
CREATE OR REPLACE FUNCTION bouncer_money_commission(p_small_business boolean, p_subscription boolean,
    p_paid_days_before int) RETURNS int
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_small_business OR (p_subscription AND p_paid_days_before >= 365) THEN 15 ELSE 30 END
$$;
