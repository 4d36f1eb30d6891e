-- The payload's fields a transaction keeps in SQL columns (schema/0040: once generated columns), for the insert and
-- update of bouncer_record_transaction and the insert of bouncer_record_transactions. A malformed or hostile value
-- becomes NULL, never a failed insert. Price in milli-units of the ISO 4217 currency, as Apple puts it. One SELECT of
-- one row expression, so PostgreSQL inlines it: a plain expression in PL/pgSQL, no executor, no re-planning.
CREATE OR REPLACE FUNCTION bouncer_transaction_columns(p_payload jsonb) RETURNS bouncer_transaction_columns
LANGUAGE sql IMMUTABLE AS $$
    SELECT ROW(p_payload ->> 'appTransactionId', p_payload ->> 'offerPeriod', p_payload ->> 'offerDiscountType',
        p_payload ->> 'revocationType',
        CASE WHEN jsonb_typeof(p_payload -> 'revocationPercentage') = 'number'
                AND (p_payload ->> 'revocationPercentage') ~ '^[0-9]{1,12}$'
            THEN (p_payload ->> 'revocationPercentage')::bigint END,
        p_payload -> 'advancedCommerceInfo',
        CASE WHEN jsonb_typeof(p_payload -> 'price') = 'number'
                AND (p_payload -> 'price')::numeric BETWEEN -1000000000000000 AND 1000000000000000
            THEN round((p_payload -> 'price')::numeric)::bigint END,
        CASE WHEN jsonb_typeof(p_payload -> 'currency') = 'string' AND length(p_payload ->> 'currency') <= 8
            THEN p_payload ->> 'currency' END)::bouncer_transaction_columns
$$;
