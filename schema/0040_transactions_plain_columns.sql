-- 0040_transactions_plain_columns: the ten columns 0009 and 0015 generated from each transaction's payload and
-- dates become plain columns, written by their one writer, bouncer_record_transaction, from the same expressions
-- (issue 22: PostgreSQL 15 reads and compiles every stored generated expression at each execution of the upsert,
-- 8.8 % of its CPU per receipt; expressions in the upsert itself are planned once per session). Existing values stay.
-- Every column is still read: the APIs (revocation_type, revocation_percentage), the log's overview fields
-- (price_milli, currency, is_renewal, offer_discount_type), support queries and the overview's specification test
-- (the rest).
ALTER TABLE transactions
    ALTER COLUMN app_transaction_id DROP EXPRESSION,
    ALTER COLUMN offer_period DROP EXPRESSION,
    ALTER COLUMN offer_discount_type DROP EXPRESSION,
    ALTER COLUMN revocation_type DROP EXPRESSION,
    ALTER COLUMN revocation_percentage DROP EXPRESSION,
    ALTER COLUMN advanced_commerce_info DROP EXPRESSION,
    ALTER COLUMN price_milli DROP EXPRESSION,
    ALTER COLUMN currency DROP EXPRESSION,
    ALTER COLUMN is_renewal DROP EXPRESSION,
    ALTER COLUMN ends_at DROP EXPRESSION;
