-- Adds consumed log rows to the overview's rollups (schema/0035): p_changes as bouncer_overview_events takes it
-- (rows without tx omitted). Called in the transaction that deletes the rows, so each change counts once. Instants
-- are kept from yesterday's midnight (UTC) on; older ones are pruned here, project by project. The money facts of the
-- same rows' purchases are the caller's (bouncer_revenue_roll_up, schema/0062: the deriver and the seed call it once
-- a batch; called from here too, the deriver's webhook path parsed each batch a second time for nothing).
CREATE OR REPLACE FUNCTION bouncer_overview_roll_up(p_project_id uuid, p_changes jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_kept timestamptz := (date_trunc('day', now() AT TIME ZONE 'UTC') - interval '1 day') AT TIME ZONE 'UTC';
    v_gone_expires timestamptz[];
    v_gone_environments text[];
    v_gone_ids text[];
BEGIN
    DELETE FROM overview_instants o WHERE o.project_id = p_project_id AND o.at < v_kept;
    IF p_changes IS NULL THEN
        RETURN;
    END IF;
    WITH batch AS MATERIALIZED (SELECT * FROM bouncer_overview_events(p_changes)),
    days AS (INSERT INTO overview_days AS o (project_id, day, midnight, environment, product_id, currency, currency_null,
        starts, start_subs, new_purchases, renewals, priced, revenue_milli, ends, end_subs, stops, stop_subs, refunds,
        expirations, mrr_n, mrr_milli)
    SELECT p_project_id, (e.at AT TIME ZONE 'UTC')::date, (e.at AT TIME ZONE 'UTC')::time = time '00:00',
        e.environment, e.product_id, COALESCE(e.currency, ''), e.currency IS NULL, sum(e.starts), sum(e.start_subs),
        sum(e.new_purchases), sum(e.renewals), sum(e.priced), sum(e.revenue_milli), sum(e.ends), sum(e.end_subs),
        sum(e.stops), sum(e.stop_subs), sum(e.refunds), sum(e.expirations), sum(e.mrr_n), sum(e.mrr_milli)
    FROM batch e
    GROUP BY 2, 3, 4, 5, 6, 7
    ON CONFLICT (project_id, day, midnight, environment, product_id, currency, currency_null) DO UPDATE SET
        starts = o.starts + EXCLUDED.starts, start_subs = o.start_subs + EXCLUDED.start_subs,
        new_purchases = o.new_purchases + EXCLUDED.new_purchases, renewals = o.renewals + EXCLUDED.renewals,
        priced = o.priced + EXCLUDED.priced, revenue_milli = o.revenue_milli + EXCLUDED.revenue_milli,
        ends = o.ends + EXCLUDED.ends, end_subs = o.end_subs + EXCLUDED.end_subs, stops = o.stops + EXCLUDED.stops,
        stop_subs = o.stop_subs + EXCLUDED.stop_subs, refunds = o.refunds + EXCLUDED.refunds,
        expirations = o.expirations + EXCLUDED.expirations, mrr_n = o.mrr_n + EXCLUDED.mrr_n,
        mrr_milli = o.mrr_milli + EXCLUDED.mrr_milli)
    INSERT INTO overview_instants AS o (project_id, at, environment, product_id, currency, currency_null, ends,
        end_subs, expirations, mrr_n, mrr_milli)
    SELECT p_project_id, e.at, e.environment, e.product_id, COALESCE(e.currency, ''), e.currency IS NULL,
        sum(e.ends), sum(e.end_subs), sum(e.expirations), sum(e.mrr_n), sum(e.mrr_milli)
    FROM batch e
    WHERE e.at >= v_kept AND (e.ends, e.end_subs, e.expirations, e.mrr_n, e.mrr_milli) <> (0, 0, 0, 0, 0)
    GROUP BY 2, 3, 4, 5, 6
    ON CONFLICT (project_id, at, environment, product_id, currency, currency_null) DO UPDATE SET
        ends = o.ends + EXCLUDED.ends, end_subs = o.end_subs + EXCLUDED.end_subs,
        expirations = o.expirations + EXCLUDED.expirations, mrr_n = o.mrr_n + EXCLUDED.mrr_n,
        mrr_milli = o.mrr_milli + EXCLUDED.mrr_milli;
    -- Trials: net counts; a trial whose count falls to 0 is gone (the log rows parsed once: the upsert returns them).
    WITH up AS (
        INSERT INTO overview_trials AS o (project_id, expires_date, environment, transaction_id,
            original_transaction_id, purchase_date, n)
        SELECT p_project_id, t.expires_date, t.environment, t.transaction_id, t.original_transaction_id,
            t.purchase_date, sum(t.n)
        FROM bouncer_overview_trials(p_changes) t
        GROUP BY 2, 3, 4, 5, 6
        HAVING sum(t.n) <> 0
        ON CONFLICT (project_id, expires_date, environment, transaction_id, original_transaction_id, purchase_date)
        DO UPDATE SET n = o.n + EXCLUDED.n
        RETURNING o.expires_date, o.environment, o.transaction_id, o.n)
    SELECT array_agg(up.expires_date), array_agg(up.environment), array_agg(up.transaction_id)
    INTO v_gone_expires, v_gone_environments, v_gone_ids
    FROM up WHERE up.n = 0;
    FOR i IN 1 .. COALESCE(cardinality(v_gone_ids), 0) LOOP
        DELETE FROM overview_trials o WHERE o.project_id = p_project_id AND o.expires_date = v_gone_expires[i]
          AND o.environment = v_gone_environments[i] AND o.transaction_id = v_gone_ids[i] AND o.n = 0;
    END LOOP;
END;
$$;
