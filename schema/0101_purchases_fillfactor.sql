-- 0101_purchases_fillfactor (issue 22): a purchase row is updated in place by every renewal, refund and notification
-- that supersedes its facts, and its one index (the primary key) never changes, so each update can be heap-only (HOT)
-- when the row's page has room. Filled to 100 %, pages had none: a renewal's new row version went to another page,
-- with a heap lock record to hold the old one meanwhile, a new primary-key entry, and the old version left to vacuum.
-- 15 % of each page is now left to the updates (bench/README, session 21). Pages written from now on; existing ones
-- gain room as pruning and vacuum free it.
ALTER TABLE purchases SET (fillfactor = 85);
