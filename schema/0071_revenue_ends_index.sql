-- 0071_revenue_ends_index: the periods a chart of states at instants reads (issue 26, item 7;
-- Sources/Storage/SweepChartStatements.swift): those still running at the range's first instant and those begun
-- since, found by when each ends (expiry or revocation) instead of every purchase of the 400 days before the range
-- (a period is active for at most 400 days). On a million transactions, a 90-day chart reads ~170k periods instead of
-- ~590k. Written by the deriver's roll-up (bouncer_revenue_roll_up), never in the receipt's transaction.
CREATE INDEX revenue_transactions_ends_idx ON revenue_transactions
    (project_id, (LEAST(expires_date, COALESCE(revocation_date, 'infinity'::timestamptz))))
    WHERE expires_date IS NOT NULL;
