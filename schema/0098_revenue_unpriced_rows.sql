-- 0098_revenue_unpriced_rows (issue 22): revenue_transactions holds priced transactions and free trials (0062), but
-- bouncer_revenue_roll_up's loop before session 18 tested that as NOT (price IS NOT NULL OR offer = 'FREE_TRIAL'),
-- which is NULL, not true, for a transaction without a price and without a free-trial offer: such a period (a payload
-- without `price`: Xcode's, older ones) became a row of price 0, counted by the charts that count purchases and
-- customers (retention cohorts, lifetime value). The roll-up, one statement per batch now, counts them out. Rows
-- already written are repaired through the change log (as 0062 and 0078): each purchase that has one is derived again
-- whole, which removes the rows and moves their days, cohorts and lifetime value back.
INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
SELECT DISTINCT v.project_id, v.environment, v.original_transaction_id, '{"tx": {"revenue": "all"}}'::jsonb, now()
FROM revenue_transactions v
JOIN transactions t ON t.project_id = v.project_id AND t.environment = v.environment
    AND t.transaction_id = v.transaction_id
WHERE v.price_milli = 0 AND NOT v.trial AND t.price_milli IS NULL;
