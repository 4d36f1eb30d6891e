-- 0042_derive_set_based: bouncer_derive_changes lists a whole batch's effects in one statement and refreshes the
-- users of several recording transactions together, each at its own transaction's time.
--
-- bouncer_derive_commit (one recording transaction's deferred effects, called once per transaction) and its step
-- type are gone: the batch's statement computes every transaction's steps itself. bouncer_webhook_refresh_users
-- takes a time per user instead of one for the call (the file creates the new signature; a database created
-- from these migrations never had the old one: its files are applied after the last migration).
DROP FUNCTION bouncer_derive_commit(uuid, timestamptz, bouncer_derive_step[]);
DROP TYPE bouncer_derive_step;
DROP FUNCTION IF EXISTS bouncer_webhook_refresh_users(uuid, timestamptz, text[], jsonb[]);
