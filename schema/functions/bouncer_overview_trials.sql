-- The free trials of log rows (schema/0035; p_changes as bouncer_overview_events takes it): each tx's old trial
-- counted −1 and its new one +1, so any batch of a transaction's changes nets to its last fields.
CREATE OR REPLACE FUNCTION bouncer_overview_trials(p_changes jsonb)
RETURNS TABLE (environment text, expires_date timestamptz, transaction_id text, original_transaction_id text,
    purchase_date timestamptz, n int)
LANGUAGE sql STABLE AS $$
    SELECT e.environment, x.expires_date, x.trial_id, x.original_id, x.purchase_date, v.sign
    FROM jsonb_to_recordset(COALESCE(p_changes, '[]')) e (environment text, tx jsonb)
    CROSS JOIN LATERAL (VALUES (-1, bouncer_overview_object(e.tx -> 'old')), (1, bouncer_overview_object(e.tx -> 'new')))
        v (sign, f)
    CROSS JOIN LATERAL jsonb_to_record(v.f) x (trial_id text, original_id text, purchase_date timestamptz,
        expires_date timestamptz)
    WHERE v.f IS NOT NULL AND x.trial_id IS NOT NULL AND x.expires_date IS NOT NULL
$$;
