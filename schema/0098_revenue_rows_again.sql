-- 0098_revenue_rows_again (issue 22): two purchases' kinds whose revenue_transactions rows (0062) can be wrong, derived
-- again whole through the change log (as 0062 and 0078), which recomputes their rows and moves their days, cohorts,
-- lifetime value and runs:
-- - a row of price 0 for a transaction without a price and without a free-trial offer: bouncer_revenue_roll_up's loop
--   before session 18 tested revenue as NOT (price IS NOT NULL OR offer = 'FREE_TRIAL'), which is NULL, not true, for
--   such a period (a payload without `price`: Xcode's, older ones), and wrote it, counted by the charts that count
--   purchases and customers (retention cohorts, lifetime value). The roll-up, one statement per batch now, counts them
--   out.
-- - a purchase with a prorated refund: the refund keeps access (no revocation_date), so the log's fact of the
--   transaction (bouncer_overview_fields) did not change when it arrived after the transaction, and the roll-up never
--   saw it. The fact now carries the refund's kind and share.
INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
SELECT DISTINCT v.project_id, v.environment, v.original_transaction_id, '{"tx": {"revenue": "all"}}'::jsonb, now()
FROM revenue_transactions v
JOIN transactions t ON t.project_id = v.project_id AND t.environment = v.environment
    AND t.transaction_id = v.transaction_id
WHERE (v.price_milli = 0 AND NOT v.trial AND t.price_milli IS NULL)
   OR t.revocation_type = 'REFUND_PRORATED';
