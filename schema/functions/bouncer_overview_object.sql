-- A JSON object as is, anything else (absent, JSON null) as SQL NULL: the overview's field sets of a log row's tx
-- (schema/0035), read with jsonb_to_record, which refuses a non-object.
CREATE OR REPLACE FUNCTION bouncer_overview_object(p jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(p) = 'object' THEN p END
$$;
