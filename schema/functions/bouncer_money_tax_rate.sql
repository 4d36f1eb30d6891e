-- The tax rate of a storefront on a day, in milli-percent (issue 26, README "Money"): the operator's rate in force
-- (tax_rates, the latest dated on or before p_day), 0 when none (proceeds before tax, as Apple's signed data has no
-- tax). One probe of tax_rates' primary key (plpgsql, so the probe's plan is kept for the session).
CREATE OR REPLACE FUNCTION bouncer_money_tax_rate(p_storefront text, p_day date) RETURNS int
LANGUAGE plpgsql STABLE AS $$
BEGIN
    -- Called per row by statements Citus routes to the tenant's worker (the export, webhooks); reads a reference table.
    PERFORM bouncer_citus_allow_nested();
    RETURN COALESCE((SELECT t.milli_percent FROM tax_rates t WHERE t.storefront = p_storefront AND t.day <= p_day
        ORDER BY t.day DESC LIMIT 1), 0);
END;
$$;
