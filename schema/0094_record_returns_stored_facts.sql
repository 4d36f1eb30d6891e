-- 0094_record_returns_stored_facts (issue 22): bouncer_record_transaction also returns its transaction's stored
-- status facts (stored_expires_date, stored_revocation_date, stored_signed_date: the row as the call left it), which
-- the record statements read with a second function per receipt until now (bouncer_stored_transaction: one more
-- PL/pgSQL call and index probe per receipt). Its return type changes, which CREATE OR REPLACE cannot do; its new
-- definition is schema/functions/bouncer_record_transaction.sql, created in this migration's transaction when it
-- is the run's last (it commits with the functions). The previous release's binaries keep working during a
-- rollout: they name the columns they read, and bouncer_stored_transaction stays for them.
-- IF EXISTS: a new database creates the functions from the files after its last migration.
DROP FUNCTION IF EXISTS bouncer_record_transaction(uuid, text, text, text, text, text, text, timestamptz, timestamptz,
    timestamptz, timestamptz, int, uuid, text, timestamptz, jsonb, text, text, text, timestamptz, text);
