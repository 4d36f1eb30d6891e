-- bouncer_money_rate for every currency of p_from into p_to on every day from p_lo to p_hi, set-based (a chart's
-- range at once instead of a plpgsql call per currency and day, ~75 µs each): the same rule, each lookup being the
-- latest rate published on or before the day. Each (currency, base) row of exchange_rates holds from its day until
-- the day before the pair's next row (lead), so its days are generated and joined by key instead of probed; a
-- currency's latest base on a day (any base, on a tie of days the greatest base: bouncer_money_rate's LIMIT 1 walks
-- exchange_rates' primary key (currency, day, base) backwards) likewise. The bases are tried in bouncer_money_rate's
-- order (either currency itself, then the base of each one's latest rate), the first with both rates winning, and
-- each quotient is the same division (v_to / v_from, a base's own rate 1::numeric); NULL when none has both.
-- StorageTests.MoneyRulesTests holds the two equal on rates with several bases, gaps and ties.
-- plpgsql, not an inlined SQL function: on Citus it runs inside the chart's statement routed to the tenant's worker,
-- where exchange_rates (a reference table) is read only with nested execution allowed, as bouncer_money_rate does
-- (an inlined read there found the worker's empty shell table: every rate NULL, CitusE2E ChartsE2ETests).
CREATE OR REPLACE FUNCTION bouncer_money_rates(p_from text[], p_to text, p_lo date, p_hi date)
RETURNS TABLE (currency text, day date, rate numeric)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    PERFORM bouncer_citus_allow_nested();
    RETURN QUERY
    WITH e AS MATERIALIZED (SELECT e.currency, e.base, e.day, e.rate,
            lead(e.day) OVER (PARTITION BY e.currency, e.base ORDER BY e.day) AS next
        FROM exchange_rates e WHERE e.currency = ANY (p_from || p_to) AND e.day <= p_hi),
    l AS MATERIALIZED (SELECT e.currency, e.base, p_lo + g.i AS day, e.rate FROM e,
            generate_series(GREATEST(e.day, p_lo) - p_lo, LEAST(e.next - 1, p_hi) - p_lo) g (i)
        WHERE e.next IS NULL OR e.next > p_lo),
    a AS MATERIALIZED (SELECT k.currency, p_lo + g.i AS day, k.base
        FROM (SELECT k.currency, k.day, k.base, lead(k.day) OVER (PARTITION BY k.currency ORDER BY k.day) AS next
            FROM (SELECT e.currency, e.day, max(e.base) AS base FROM e GROUP BY 1, 2) k) k,
            generate_series(GREATEST(k.day, p_lo) - p_lo, LEAST(k.next - 1, p_hi) - p_lo) g (i)
        WHERE k.next IS NULL OR k.next > p_lo)
    SELECT f.currency, p_lo + d.i, CASE WHEN f.currency = p_to THEN 1::numeric ELSE COALESCE(
            tf.rate / 1::numeric,
            1::numeric / ft.rate,
            (CASE WHEN af.base = p_to THEN 1::numeric ELSE taf.rate END)
                / (CASE WHEN af.base = f.currency THEN 1::numeric ELSE faf.rate END),
            (CASE WHEN at.base = p_to THEN 1::numeric ELSE tat.rate END)
                / (CASE WHEN at.base = f.currency THEN 1::numeric ELSE fat.rate END)) END
    FROM (SELECT DISTINCT u.currency FROM unnest(p_from) u (currency)) f
    CROSS JOIN generate_series(0, p_hi - p_lo) d (i)
    LEFT JOIN l tf ON tf.currency = p_to AND tf.base = f.currency AND tf.day = p_lo + d.i
    LEFT JOIN l ft ON ft.currency = f.currency AND ft.base = p_to AND ft.day = p_lo + d.i
    LEFT JOIN a af ON af.currency = f.currency AND af.day = p_lo + d.i
    LEFT JOIN l taf ON taf.currency = p_to AND taf.base = af.base AND taf.day = p_lo + d.i
    LEFT JOIN l faf ON faf.currency = f.currency AND faf.base = af.base AND faf.day = p_lo + d.i
    LEFT JOIN a at ON at.currency = p_to AND at.day = p_lo + d.i
    LEFT JOIN l tat ON tat.currency = p_to AND tat.base = at.base AND tat.day = p_lo + d.i
    LEFT JOIN l fat ON fat.currency = f.currency AND fat.base = at.base AND fat.day = p_lo + d.i;
END;
$$;
