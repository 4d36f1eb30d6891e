-- 0036_overview_indexes: the overview reads the rollups of 0035, so the six indexes it read on the receipt's hot
-- tables go (issue 22: "each index on a write table is justified by a query in the code"). No other statement
-- reads them (docs/architecture.md, "Indexes on the write tables"): the reconciler's purchase scans filter the
-- project's whole set through purchases_pkey, the trial conversions' lookup of paid transactions keeps
-- transactions_original_idx (the customer timeline's), and nothing else filters transactions by a date.
DROP INDEX transactions_start_day_idx;
DROP INDEX transactions_end_day_idx;
DROP INDEX transactions_long_idx;
DROP INDEX transactions_trial_end_idx;
DROP INDEX transactions_revocation_idx;
DROP INDEX purchases_expires_idx;
