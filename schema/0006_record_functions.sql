-- released-sha256: 1cc2753cbdfcdb631a48079d9901d0895d5f1b77e8b0a603a627b1753f046fb0
-- 0006_record_functions: recording a verified transaction, renewal info or a notification is one statement (one
-- round trip) instead of about ten: bouncer_record_transaction, bouncer_record_renewal and
-- bouncer_record_notification, whose current definitions are in schema/functions/.
--
-- As released, this file also held their first bodies (342 lines, 164 of them restated by 0008 to add one
-- parameter). A database that applies this file from now on replaces all three in the same migrate run before
-- anything can call them (0008 drops two, 0025 replaces the third, schema/functions/ defines all), so the bodies
-- were removed (issue 22) and only the signatures stay, as 0008's DROP FUNCTION and 0025's CREATE OR REPLACE expect
-- them. The migrator records the released checksum above for this file, so databases that applied the released
-- text, and binaries that carry it, still agree (schema/README.md, "Rewritten migrations").
CREATE FUNCTION bouncer_record_transaction(uuid, text, text, text, text, text, text, timestamptz, timestamptz,
    timestamptz, timestamptz, int, uuid, text, timestamptz, jsonb, text, text, text, timestamptz)
RETURNS TABLE (purchase purchases, entitlements text[], ownership text, previous_owners text[])
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'declared by 0006, defined by 0008'; END $$;

CREATE FUNCTION bouncer_record_renewal(uuid, text, text, text, int, int, timestamptz, boolean, int, int, text,
    timestamptz, text, timestamptz, jsonb, timestamptz)
RETURNS TABLE (outcome text, purchase purchases)
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'declared by 0006, defined by 0025'; END $$;

CREATE FUNCTION bouncer_record_notification(uuid, uuid, text, text, text, text, timestamptz, jsonb, bigint, boolean,
    text, text, text, text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, int, uuid, text,
    timestamptz, jsonb, text, text, text, int, int, timestamptz, boolean, int, int, text, timestamptz, text,
    timestamptz, jsonb, timestamptz)
RETURNS text
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'declared by 0006, defined by 0008'; END $$;
