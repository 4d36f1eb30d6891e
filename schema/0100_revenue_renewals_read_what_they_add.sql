-- 0100_revenue_renewals_read_what_they_add (issue 22): transactions_original_idx keys a purchase's transactions by purchase
-- date too (it was INCLUDEd), so a statement that wants a purchase's transactions from a date on reads those alone:
-- the deriver's revenue roll-up of a renewal read every earlier transaction of the purchase from the heap and
-- dropped it by the filter (an index scan filters INCLUDE columns only after the heap fetch), O(history) per
-- renewal. The same entries, the same width: a write costs what it did. Its other readers (the customer timeline's
-- transactions by purchase, the overview's trial conversions, an EXISTS with a date bound) read a prefix of the key
-- as before.
DROP INDEX transactions_original_idx;
CREATE INDEX transactions_original_idx ON transactions (project_id, environment, original_transaction_id,
    purchase_date) INCLUDE (transaction_id, price_milli);
-- bouncer_revenue_runs_sync takes whether the batch only added rows to each purchase (a new argument: a new function,
-- so the old one is dropped here; its new definition is schema/functions/bouncer_revenue_runs_sync.sql).
DROP FUNCTION IF EXISTS bouncer_revenue_runs_sync(uuid, text[], text[], timestamptz[]);
