-- 0087_revenue_movement_days (issue 26, item 7): mrr_movement's daily roll-up, read at interval=day without a product
-- or country filter, written by the deriver after the receipt's commit with each purchase's spans of MRR (0085), by
-- explicit statements (bouncer_revenue_movement_sync, called by bouncer_revenue_values_sync; no trigger, issue 27).
-- Whoever rebuilds revenue_values deletes the project's revenue_movement_days with it (as revenue_value_days).
-- No foreign key to projects (as 0075, 0085): bouncer_project_purge removes its rows.
--
-- revenue_movement_days: per UTC day D (the interval from the midnight before D to D's, as the chart's days), the
-- environment, currency, kind and amount (milli-units of MRR), how many purchases moved so (`n`), a purchase's move
-- on D following from its spans covering the two midnights: kinds 0 new, 1 expansion, 2 contraction, 4 reactivation
-- (their amounts); 5, the value a purchase holds at D's midnight when it held another or none at the one before; 6,
-- the value it held at the one before when it holds another at D's. Churned (3) is not kept: per value, the moves in
-- less the moves out less the value's daily difference (revenue_value_days). Every row is on the day a span begins:
-- a renewal, which moves a span's end, writes none. The chart reads the days that have ended and the spans since the
-- last midnight. A row back to zero is removed.
CREATE TABLE revenue_movement_days (
    project_id    uuid     NOT NULL,
    environment   text     NOT NULL,
    day           date     NOT NULL,
    currency      text     NOT NULL,
    kind          smallint NOT NULL,
    amount_milli  bigint   NOT NULL,
    n             bigint   NOT NULL,
    PRIMARY KEY (project_id, day, environment, currency, kind, amount_milli)
);
-- Backfill: the spans are written again from scratch through the change log (as 0085), so each purchase's movement
-- is its spans' from nothing; revenue_value_days follows them (removed with them).
DELETE FROM revenue_value_days;
DELETE FROM revenue_values;
INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
SELECT DISTINCT v.project_id, v.environment, v.original_transaction_id, '{"tx": {"revenue": "all"}}'::jsonb, now()
FROM revenue_transactions v
WHERE v.type = 'Auto-Renewable Subscription' AND NOT v.trial AND v.price_milli > 0 AND v.expires_date IS NOT NULL;
