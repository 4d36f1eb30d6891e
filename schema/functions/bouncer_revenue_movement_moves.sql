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
-- difference of its old and new moves (n: -1 for each old move, +1 for each new one; the caller sums them per row and
-- moves revenue_movement_days once for its batch, bouncer_revenue_movement_days_move, as the value days). Called by
-- bouncer_revenue_values_sync; never in the receipt's transaction.
-- Loops over the purchase's few spans, no statement: a statement's plan set up per call cost ~140 µs per new purchase
-- (bench/api), these loops a few expressions per span and day.
CREATE OR REPLACE FUNCTION bouncer_revenue_movement_moves(p_project_id uuid, p_environment text, p_from timestamptz,
    p_before revenue_values[], p_old revenue_values[], p_new revenue_values[]) RETURNS revenue_movement_days[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v_d0 date;
    v_day date;
    v_days date[] := '{}';
    v_m0 timestamptz;
    v_m1 timestamptz;
    v_pre revenue_values[] := '{}';
    v_side int;
    s revenue_values;
    -- The spans covering the two midnights (a: the first, b: the second), the first payment as the spans begun or
    -- ended that day say it, and whether the purchase was paid for before the first midnight.
    a_m bigint;
    a_c text;
    b_m bigint;
    b_c text;
    v_since timestamptz;
    v_before boolean;
    v_c text;
    v0 bigint;
    v1 bigint;
    v_out revenue_movement_days[] := '{}';
BEGIN
    IF p_from > '-infinity' THEN
        v_d0 := ((p_from - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1;
    END IF;
    -- The days that may hold moves: those a span of p_old or p_new begins on, from the one closing p_from.
    FOREACH s IN ARRAY COALESCE(p_old, '{}') || COALESCE(p_new, '{}') LOOP
        v_day := ((s.starts_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1;
        IF (v_d0 IS NULL OR v_day >= v_d0) AND NOT v_day = ANY (v_days) THEN
            v_days := v_days || v_day;
        END IF;
    END LOOP;
    IF cardinality(v_days) = 0 THEN
        RETURN v_out;
    END IF;
    IF v_d0 = ANY (v_days) THEN
        v_m0 := (v_d0 - 1)::timestamp AT TIME ZONE 'UTC';
        -- The span covering the midnight before that day, unless p_old has it: it ended before p_from (p_before).
        FOREACH s IN ARRAY COALESCE(p_old, '{}') LOOP
            IF s.starts_at <= v_m0 AND s.ends_at > v_m0 THEN
                v_m0 := NULL;
                EXIT;
            END IF;
        END LOOP;
        IF v_m0 IS NOT NULL THEN
            FOREACH s IN ARRAY COALESCE(p_before, '{}') LOOP
                IF s.starts_at <= v_m0 AND s.ends_at > v_m0 THEN
                    v_pre := v_pre || s;
                END IF;
            END LOOP;
        END IF;
    END IF;
    FOREACH v_day IN ARRAY v_days LOOP
        v_m0 := (v_day - 1)::timestamp AT TIME ZONE 'UTC';
        v_m1 := v_day::timestamp AT TIME ZONE 'UTC';
        FOREACH v_side IN ARRAY ARRAY[-1, 1] LOOP
            a_m := NULL;
            a_c := NULL;
            b_m := NULL;
            b_c := NULL;
            v_since := NULL;
            FOREACH s IN ARRAY CASE WHEN v_side < 0 THEN COALESCE(p_old, '{}') ELSE COALESCE(p_new, '{}') END || v_pre
            LOOP
                IF a_m IS NULL AND s.starts_at <= v_m0 AND s.ends_at > v_m0 THEN
                    a_m := s.monthly_milli;
                    a_c := s.currency;
                END IF;
                IF b_m IS NULL AND s.starts_at <= v_m1 AND s.ends_at > v_m1 THEN
                    b_m := s.monthly_milli;
                    b_c := s.currency;
                END IF;
                IF (s.starts_at > v_m0 AND s.starts_at <= v_m1) OR (s.ends_at > v_m0 AND s.ends_at <= v_m1) THEN
                    v_since := LEAST(v_since, s.paid_since);
                END IF;
            END LOOP;
            v_before := a_m IS NOT NULL OR v_since < v_m0;
            v_c := COALESCE(b_c, a_c);
            -- The moves by kind (churned, 3, is not kept: the chart counts it from revenue_value_days and the moves in
            -- and out, 5 and 6, so a renewal, which only moves its span's end, moves nothing here).
            v0 := COALESCE(a_m, 0);
            v1 := COALESCE(b_m, 0);
            IF v0 = 0 AND v1 > 0 THEN
                -- New, or a reactivation when paid for before (neither when that is unknown).
                IF v_before IS NOT NULL THEN
                    v_out := v_out || ROW(p_project_id, p_environment, v_day, v_c,
                        (CASE WHEN v_before THEN 4 ELSE 0 END)::smallint, v1, v_side)::revenue_movement_days;
                END IF;
            ELSIF v0 > 0 AND v1 > v0 THEN
                v_out := v_out || ROW(p_project_id, p_environment, v_day, v_c, 1::smallint, v1 - v0,
                    v_side)::revenue_movement_days;
            ELSIF v0 > 0 AND v1 > 0 AND v1 < v0 THEN
                v_out := v_out || ROW(p_project_id, p_environment, v_day, v_c, 2::smallint, v0 - v1,
                    v_side)::revenue_movement_days;
            END IF;
            IF b_m IS NOT NULL AND (a_m IS NULL OR a_m <> b_m OR a_c <> b_c) THEN
                v_out := v_out || ROW(p_project_id, p_environment, v_day, b_c, 5::smallint, b_m,
                    v_side)::revenue_movement_days;
            END IF;
            IF a_m IS NOT NULL AND b_m IS NOT NULL AND (a_m <> b_m OR a_c <> b_c) THEN
                v_out := v_out || ROW(p_project_id, p_environment, v_day, a_c, 6::smallint, a_m,
                    v_side)::revenue_movement_days;
            END IF;
        END LOOP;
    END LOOP;
    RETURN v_out;
END;
$$;
