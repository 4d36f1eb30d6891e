-- ISO 8601 UTC with milliseconds, as the API renders instants.
CREATE OR REPLACE FUNCTION bouncer_webhook_time(p_at timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
