-- 0096_record_new_transactions (issue 22): the set-based record of a batch covers renewals of purchases their poster
-- holds alone, besides first posts: bouncer_record_first_posts becomes bouncer_record_new_transactions
-- (schema/functions/). IF EXISTS: a database migrated from scratch never had it (function files run after the
-- migrations).
DROP FUNCTION IF EXISTS bouncer_record_first_posts(bouncer_recording[]);
