-- The rate converting p_from into p_to on p_day (units of p_to per unit of p_from; 1 for the same currency): within
-- one base's published table, rate(to) / rate(from), each the latest published on or before p_day (a base's own
-- rate is 1). The bases tried: either currency itself, then the base of each one's latest rate. NULL when none has
-- both: the amount is reported apart, unconverted. Each lookup is one probe of exchange_rates' primary key.
CREATE OR REPLACE FUNCTION bouncer_money_rate(p_from text, p_to text, p_day date) RETURNS numeric
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p_from = p_to THEN 1::numeric ELSE (
        SELECT r.to_rate / r.from_rate
        FROM (VALUES (1, p_from), (2, p_to),
                (3, (SELECT e.base FROM exchange_rates e WHERE e.currency = p_from AND e.day <= p_day
                     ORDER BY e.day DESC LIMIT 1)),
                (4, (SELECT e.base FROM exchange_rates e WHERE e.currency = p_to AND e.day <= p_day
                     ORDER BY e.day DESC LIMIT 1))) b (n, base)
        CROSS JOIN LATERAL (SELECT
            CASE WHEN b.base = p_from THEN 1::numeric ELSE (SELECT e.rate FROM exchange_rates e
                WHERE e.currency = p_from AND e.base = b.base AND e.day <= p_day ORDER BY e.day DESC LIMIT 1) END
                AS from_rate,
            CASE WHEN b.base = p_to THEN 1::numeric ELSE (SELECT e.rate FROM exchange_rates e
                WHERE e.currency = p_to AND e.base = b.base AND e.day <= p_day ORDER BY e.day DESC LIMIT 1) END
                AS to_rate) r
        WHERE b.base IS NOT NULL AND r.from_rate IS NOT NULL AND r.to_rate IS NOT NULL
        ORDER BY b.n LIMIT 1) END
$$;
