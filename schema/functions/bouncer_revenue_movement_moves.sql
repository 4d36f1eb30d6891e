-- mrr_movement's daily roll-up (revenue_movement_days, schema/0087): the moves of one purchase whose spans of MRR
-- (revenue_values) bouncer_revenue_values_sync just rewrote from p_from on: p_old, the spans that reached p_from
-- before; p_new, the spans from the one running into p_from on. A purchase's movement on a UTC day D (the interval
-- from the midnight before D to D's, as mrr_movement's intervals at interval=day) follows from the spans covering
-- those two midnights (starts_at <= M < ends_at): v0 → v1, in v1's currency (else v0's), a reactivation rather than
-- new when a span covered the first midnight or the purchase's first payment (paid_since) came before it. Kept: new,
-- expansion, contraction and reactivation amounts, and the values moved into (the second midnight's span, when the
-- first's differs) and out of (the first's, when a different one follows) by purchases with a span at both or
-- the second; the churned ones are the rest of the values' daily difference (revenue_value_days), which the chart
-- reads. All of them happen on the day a span begins, so a renewal (its span's end moved) returns none. Only the
-- days from the one closing p_from on can change: each of them where a span of p_old or p_new begins (on the first of
-- them, its first midnight's span may have ended before p_from: p_before, the spans that ended in the day before
-- p_from, which the caller read with the others), moved by the
-- difference of its old and new moves (n: the change of each row's count; the caller moves revenue_movement_days
-- once for its batch, bouncer_revenue_movement_days_move, as the value days). Called by bouncer_revenue_values_sync;
-- never in the receipt's transaction.
CREATE OR REPLACE FUNCTION bouncer_revenue_movement_moves(p_project_id uuid, p_environment text, p_from timestamptz,
    p_before revenue_values[], p_old revenue_values[], p_new revenue_values[]) RETURNS revenue_movement_days[]
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_d0 date;
    v_days date[];
    v_m timestamptz;
    v_pre revenue_values[] := '{}';
BEGIN
    IF p_from > '-infinity' THEN
        v_d0 := ((p_from - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1;
    END IF;
    -- The days that may hold moves: those a span of p_old or p_new begins on, from the one closing p_from.
    SELECT array_agg(DISTINCT x.day) INTO v_days
    FROM (SELECT ((o.starts_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1 AS day FROM unnest(p_old) o
        UNION ALL SELECT ((n.starts_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1 FROM unnest(p_new) n) x
    WHERE v_d0 IS NULL OR x.day >= v_d0;
    IF v_days IS NULL THEN
        RETURN '{}';
    END IF;
    IF v_d0 = ANY (v_days) THEN
        v_m := (v_d0 - 1)::timestamp AT TIME ZONE 'UTC';
        -- The span covering the midnight before that day, unless p_old has it: it ended before p_from (p_before).
        IF NOT EXISTS (SELECT 1 FROM unnest(p_old) o WHERE o.starts_at <= v_m AND o.ends_at > v_m) THEN
            v_pre := ARRAY(SELECT x FROM unnest(p_before) x WHERE x.starts_at <= v_m AND x.ends_at > v_m);
        END IF;
    END IF;
    RETURN ARRAY(WITH sides AS (SELECT -1 AS sign, o.* FROM unnest(p_old) o
            UNION ALL SELECT 1, n.* FROM unnest(p_new) n
            UNION ALL SELECT g.sign, p.* FROM unnest(v_pre) p CROSS JOIN (VALUES (-1), (1)) g (sign)),
        d AS (SELECT unnest(v_days) AS day),
        m0 AS (SELECT d.day, g.sign, (d.day - 1)::timestamp AT TIME ZONE 'UTC' AS m0,
                d.day::timestamp AT TIME ZONE 'UTC' AS m1
            FROM d CROSS JOIN (VALUES (-1), (1)) g (sign)),
        -- since: the first payment, as the spans begun or ended that day say it.
        m AS (SELECT m0.*, (SELECT min(s.paid_since) FROM sides s WHERE s.sign = m0.sign
                AND ((s.starts_at > m0.m0 AND s.starts_at <= m0.m1) OR (s.ends_at > m0.m0 AND s.ends_at <= m0.m1)))
                AS since
            FROM m0),
        y AS (SELECT m.day, m.sign, a.monthly_milli IS NOT NULL OR m.since < m.m0 AS before,
                COALESCE(a.monthly_milli, 0) AS v0, COALESCE(b.monthly_milli, 0) AS v1, a.currency AS c0,
                b.currency AS c1, a.monthly_milli AS a, b.monthly_milli AS b
            FROM m
            LEFT JOIN LATERAL (SELECT s.monthly_milli, s.currency FROM sides s
                WHERE s.sign = m.sign AND s.starts_at <= m.m0 AND s.ends_at > m.m0 LIMIT 1) a ON true
            LEFT JOIN LATERAL (SELECT s.monthly_milli, s.currency FROM sides s
                WHERE s.sign = m.sign AND s.starts_at <= m.m1 AND s.ends_at > m.m1 LIMIT 1) b ON true),
        -- The moves by kind (churned, 3, is not kept: the chart counts it from revenue_value_days and the moves in and
        -- out, 5 and 6, so a renewal, which only moves its span's end, moves nothing here).
        k AS (SELECT y.day, k.currency, k.kind::smallint AS kind, k.amount, sum(y.sign) AS n
            FROM y CROSS JOIN LATERAL (VALUES
                (0, COALESCE(y.c1, y.c0), CASE WHEN y.v0 = 0 AND y.v1 > 0 AND NOT y.before THEN y.v1 END),
                (1, COALESCE(y.c1, y.c0), CASE WHEN y.v0 > 0 AND y.v1 > y.v0 THEN y.v1 - y.v0 END),
                (2, COALESCE(y.c1, y.c0), CASE WHEN y.v0 > 0 AND y.v1 > 0 AND y.v1 < y.v0 THEN y.v0 - y.v1 END),
                (4, COALESCE(y.c1, y.c0), CASE WHEN y.v0 = 0 AND y.v1 > 0 AND y.before THEN y.v1 END),
                (5, y.c1, CASE WHEN y.b IS NOT NULL AND (y.a IS NULL OR (y.a, y.c0) <> (y.b, y.c1)) THEN y.b END),
                (6, y.c0, CASE WHEN y.a IS NOT NULL AND y.b IS NOT NULL AND (y.a, y.c0) <> (y.b, y.c1) THEN y.a END))
                k (kind, currency, amount)
            WHERE k.amount IS NOT NULL AND (k.kind >= 5 OR y.v0 <> y.v1)
            GROUP BY 1, 2, 3, 4 HAVING sum(y.sign) <> 0)
        SELECT ROW(p_project_id, p_environment, k.day, k.currency, k.kind, k.amount, k.n)::revenue_movement_days
        FROM k);
END;
$$;
