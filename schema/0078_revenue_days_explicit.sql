-- 0078_revenue_days_explicit: revenue_days (0072) is kept by the roll-up's own statements instead of a trigger on
-- revenue_transactions (issue 26, item 7; a distributed table cannot carry a trigger, issue 27): the deriver's
-- bouncer_revenue_roll_up moves each row it writes or removes by bouncer_revenue_days_move
-- (schema/functions/bouncer_revenue_days_move.sql), in the same transaction. Nothing else writes revenue_transactions;
-- whoever rebuilds it deletes the project's revenue_days with it and replays the log (0062's backfill rows).
DROP TRIGGER revenue_transactions_days ON revenue_transactions;
DROP FUNCTION bouncer_revenue_days_sync();
