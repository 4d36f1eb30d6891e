-- 0019_console_session_binding: a console session is bound to the admin token it was opened with.
-- admin_fingerprint is SHA-256("console-session-binding:" || token) (ConsoleSessionRules.adminFingerprint), never the
-- token; the server refuses a session whose fingerprint is not its current token's, so changing BOUNCER_ADMIN_TOKEN
-- ends every session. Sessions opened before this migration have no fingerprint ('' matches no token): they end too.
ALTER TABLE console_sessions ADD COLUMN admin_fingerprint bytea NOT NULL DEFAULT ''::bytea;
ALTER TABLE console_sessions ALTER COLUMN admin_fingerprint DROP DEFAULT;
