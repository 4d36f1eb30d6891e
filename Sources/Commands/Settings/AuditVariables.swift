import Domain

extension ServeSettings {
    /// The audit log's variables, appended to `ServeSettings.variables`.
    static let auditVariables: [Variable] = [
        int("BOUNCER_AUDIT_RETENTION_DAYS",
            "days the audit log keeps an entry; older ones are deleted hourly (default \(AuditLog.defaultRetentionDays))",
            1...36_500, maxLength: 5) { $0.auditRetentionDays = $1 },
    ]
}
