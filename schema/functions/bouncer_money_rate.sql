-- The rate converting p_from into p_to on p_day (units of p_to per unit of p_from; 1 for the same currency): within
-- one base's published table, rate(to) / rate(from), each the latest published on or before p_day (a base's own
-- rate is 1). The bases tried, in order, the first with both rates winning: either currency itself, then the base of
-- each one's latest rate. NULL when none has both: the amount is reported apart, unconverted. Each lookup is one
-- probe of exchange_rates' primary key, made only when the bases before it failed (plpgsql, so the probes' plans are
-- kept for the session: a chart asks for a rate per currency and day, thousands per call).
CREATE OR REPLACE FUNCTION bouncer_money_rate(p_from text, p_to text, p_day date) RETURNS numeric
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_bases text[];
    v_base text;
    v_from numeric;
    v_to numeric;
    v_n int := 0;
BEGIN
    IF p_from = p_to THEN
        RETURN 1;
    END IF;
    -- Called per row by statements Citus routes to the tenant's worker (the customer list); reads a reference table.
    PERFORM bouncer_citus_allow_nested();
    v_bases := ARRAY[p_from, p_to];
    LOOP
        v_n := v_n + 1;
        IF v_n = 3 THEN
            v_bases := v_bases || (SELECT e.base FROM exchange_rates e WHERE e.currency = p_from AND e.day <= p_day
                ORDER BY e.day DESC LIMIT 1);
        ELSIF v_n = 4 THEN
            v_bases := v_bases || (SELECT e.base FROM exchange_rates e WHERE e.currency = p_to AND e.day <= p_day
                ORDER BY e.day DESC LIMIT 1);
        ELSIF v_n > 4 THEN
            RETURN NULL;
        END IF;
        v_base := v_bases[v_n];
        CONTINUE WHEN v_base IS NULL;
        v_from := CASE WHEN v_base = p_from THEN 1::numeric ELSE (SELECT e.rate FROM exchange_rates e
            WHERE e.currency = p_from AND e.base = v_base AND e.day <= p_day ORDER BY e.day DESC LIMIT 1) END;
        CONTINUE WHEN v_from IS NULL;
        v_to := CASE WHEN v_base = p_to THEN 1::numeric ELSE (SELECT e.rate FROM exchange_rates e
            WHERE e.currency = p_to AND e.base = v_base AND e.day <= p_day ORDER BY e.day DESC LIMIT 1) END;
        CONTINUE WHEN v_to IS NULL;
        RETURN v_to / v_from;
    END LOOP;
END;
$$;
