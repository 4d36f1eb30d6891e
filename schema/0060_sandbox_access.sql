-- Sandbox access (issue 25, item 5): with 'allowlist', Sandbox purchases (TestFlight, App Review) of users not in
-- sandbox_allowed_user_ids are stored as facts but grant nothing (SandboxAccessRules, applied when reading).
ALTER TABLE projects
    ADD COLUMN sandbox_access text NOT NULL DEFAULT 'all' CHECK (sandbox_access IN ('all', 'allowlist')),
    ADD COLUMN sandbox_allowed_user_ids text[] NOT NULL DEFAULT '{}';
