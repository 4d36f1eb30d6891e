-- 0026_index_audit: every secondary index on a write table names the query that reads it (docs/architecture.md,
-- "Indexes on the write tables", with each one's write cost per receipt). Two did not earn their writes:
--
-- ownership_events_original_idx: no statement reads ownership moves by purchase (the timeline and erase read them
-- by user, through ownership_events_from_idx / _to_idx), yet every transfer wrote it.
DROP INDEX ownership_events_original_idx;

-- transactions_paid_idx and transactions_original_idx had the same key, so every new transaction was inserted into
-- both (the partial one's predicate, a price above zero, holds for almost every row). One index serves both readers:
-- the customer timeline's join by purchase (an index scan: it reads the payload from the heap) and the overview's
-- trial conversions (an index-only scan: the INCLUDE columns are every column the EXISTS names, the price filter
-- included).
DROP INDEX transactions_paid_idx;
DROP INDEX transactions_original_idx;
CREATE INDEX transactions_original_idx ON transactions (project_id, environment, original_transaction_id)
    INCLUDE (transaction_id, purchase_date, price_milli);
