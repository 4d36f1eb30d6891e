-- 0058_retention_decisions_recent: the console's "last decisions" of a project (GET
-- /v1/admin/projects/{id}/retention/decisions, newest first) read from an index instead of sorting every decision.
CREATE INDEX retention_decisions_recent_idx
    ON retention_decisions (project_id, decided_at DESC, request_identifier DESC);
