-- 0077_revenue_trial_converted: trial_conversion's numerator as a fact of the trial's row (issue 26, item 7).
-- converted: a free trial (trial) whose purchase has a paid period (NOT trial, price_milli > 0) beginning at or after
-- the trial's purchase date; false on every other row. Set by the deriver's roll-up (bouncer_revenue_roll_up, after
-- the receipt's commit) whenever a purchase's rows change, so the chart counts a range's trials from one index
-- instead of probing each trial's purchase.
ALTER TABLE revenue_transactions ADD COLUMN converted boolean NOT NULL DEFAULT false;
-- The chart's range of trials (index-only: the filters' columns included) and the roll-up's trials of one purchase;
-- both partial, so a paid renewal's row adds no entry to either.
CREATE INDEX revenue_transactions_trial_idx ON revenue_transactions (project_id, purchase_date)
    INCLUDE (converted, environment, product_id, storefront) WHERE trial;
CREATE INDEX revenue_transactions_trial_original_idx ON revenue_transactions (project_id, original_transaction_id,
    environment) WHERE trial;
-- Backfill: the rows already derived, by the same rule.
UPDATE revenue_transactions v SET converted = true
WHERE v.trial AND EXISTS (SELECT 1 FROM revenue_transactions w WHERE w.project_id = v.project_id
    AND w.environment = v.environment AND w.original_transaction_id = v.original_transaction_id AND NOT w.trial
    AND w.price_milli > 0 AND w.purchase_date >= v.purchase_date);
