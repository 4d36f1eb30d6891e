-- 0076_revenue_days_project_key: the revenue roll-up's daily table (0072, written by the deriver's roll-up beside
-- revenue_transactions) joins the roll-ups that 0075 took the foreign key to projects from: no check of the
-- tenant's row per roll-up row; bouncer_project_deleted removes its rows as it removes revenue_transactions'.
ALTER TABLE revenue_days DROP CONSTRAINT revenue_days_project_id_fkey;
