public import Domain
public import Foundation

/// Deletes audit entries older than `BOUNCER_AUDIT_RETENTION_DAYS` (`AuditLog.defaultRetentionDays`): one thread
/// that, every hour (first at start), deletes the oldest expired entries in batches of `batch`, one short
/// statement each, until none is left, so it never holds many rows locked nor competes long with the API.
public final class AuditRetention: Service {
    /// Entries deleted per statement.
    public static let batch = 500
    private let job: Job

    /// A pruner of `store` keeping `days` days; `start` starts its thread.
    public init(store: any AuditLogStore, days: Int, interval: Duration = .seconds(3600),
                now: @escaping @Sendable () -> Date = { Date() }, log: @escaping @Sendable (String) -> Void) {
        job = Job(name: "bouncer.audit-retention", interval: interval) { job in
            let cutoff = now().addingTimeInterval(-Double(days) * 86_400)
            do {
                let deleted = try store.deleteEntries(before: cutoff, limit: Self.batch)
                return deleted == Self.batch && !job.isStopping ? .again : .wait
            } catch {
                log(jsonLine("audit-retention", "pruning the audit log failed: \(error)"))
                return .wait
            }
        }
    }

    /// `audit-retention`.
    public var name: String { "audit-retention" }

    /// Starts the thread (`bouncer.audit-retention`).
    public func start() { job.start() }

    /// Whether the thread runs.
    public var isRunning: Bool { job.isRunning }

    /// Stops after the statement in progress.
    public func stop(grace: Duration) { job.stop(grace: grace) }
}
