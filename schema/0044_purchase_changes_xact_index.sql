-- 0044_purchase_changes_xact_index: the deriver finds a batch's transactions' rows without walking the backlog.
--
-- A batch with a webhook is its first rows' recording transactions, whole (bouncer_derive_changes): their rows are
-- looked up by (project_id, xact = ANY (…)). Under the primary key alone (project_id, seq) that lookup filtered every
-- row of the project's backlog, per batch: O(backlog x batches) through a drain, and dearer the further behind the
-- deriver is. A transaction's rows are not a seq range (concurrent transactions interleave theirs, and a long one's
-- may follow any number of others'), so nothing cheaper than an index is correct. Its write cost per log row: one
-- entry at the right edge of the project's part (xact grows with time), measured in docs/architecture.md.
CREATE INDEX purchase_changes_xact_idx ON purchase_changes (project_id, xact);
