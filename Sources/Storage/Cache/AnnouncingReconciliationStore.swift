public import Domain
public import Foundation
public import Postgres

/// A `ReconciliationStore` that announces every purchase a reconciliation changed or a recovered notification
/// touched (every user bound to it reads again), after the inner call returns.
public final class AnnouncingReconciliationStore: AnnouncingStore<any ReconciliationStore>, @unchecked Sendable, ReconciliationStore {
    /// An `announce` for a process without caches of its own (`bouncer reconcile`): one `NOTIFY` per payload, so
    /// running servers forget what the CLI changed. A failure is ignored: their reads expire within the read
    /// cache's maximum age anyway.
    public static func notifying(pool: ConnectionPool) -> @Sendable ([CacheMessage]) -> Void {
        let origin = UUID()
        return { messages in
            guard !messages.isEmpty else { return }
            _ = try? CacheMessage.send(messages, origin: origin, pool: pool)
        }
    }

    public func applyChecked(transaction: TransactionFacts, renewal: RenewalFacts?, via: ReconcileVia,
                             project: Project, runId: Int64, now: Date) throws -> ReconcileApplied
    {
        let applied = try inner.applyChecked(transaction: transaction, renewal: renewal, via: via, project: project,
                                             runId: runId, now: now)
        if applied.change != nil || applied.newRefund {
            announce([.purchase(project.id, environment: transaction.environment.rawValue,
                                originalTransactionId: transaction.originalTransactionId)])
        }
        return applied
    }

    public func applyRecovered(_ notification: NotificationFacts, project: Project, runId: Int64, now: Date) throws
        -> (outcome: NotificationOutcome, change: ReconcileChange?)
    {
        let result = try inner.applyRecovered(notification, project: project, runId: runId, now: now)
        if result.outcome == .processed, let original = notification.originalTransactionId,
           let environment = notification.transaction?.environment ?? notification.renewal?.environment {
            announce([.purchase(project.id, environment: environment.rawValue, originalTransactionId: original)])
        }
        return result
    }

    public func withProjectLock<T>(projectId: UUID, _ body: () throws -> T) throws -> T? {
        try inner.withProjectLock(projectId: projectId, body)
    }

    public func projectsWithCredentials() throws -> [UUID] { try inner.projectsWithCredentials() }

    public func lastRunStart(projectId: UUID, trigger: ReconcileTrigger) throws -> Date? {
        try inner.lastRunStart(projectId: projectId, trigger: trigger)
    }

    public func startRun(projectId: UUID, trigger: ReconcileTrigger, instance: String, at: Date) throws -> Int64 {
        try inner.startRun(projectId: projectId, trigger: trigger, instance: instance, at: at)
    }

    public func finishRun(_ report: ReconcileReport) throws { try inner.finishRun(report) }

    public func subscriptionsToCheck(projectId: UUID, environments: [StoreEnvironment], expiredSince: Date,
                                     limit: Int) throws -> (candidates: [ReconcileCandidate], total: Int) {
        try inner.subscriptionsToCheck(projectId: projectId, environments: environments, expiredSince: expiredSince,
                                       limit: limit)
    }

    public func purchasesToCheck(projectId: UUID, environments: [StoreEnvironment], limit: Int) throws
        -> (candidates: [ReconcileCandidate], total: Int)
    {
        try inner.purchasesToCheck(projectId: projectId, environments: environments, limit: limit)
    }

    public func markChecked(projectId: UUID, environment: StoreEnvironment, originalTransactionId: String, at: Date)
        throws
    {
        try inner.markChecked(projectId: projectId, environment: environment,
                              originalTransactionId: originalTransactionId, at: at)
    }

    public func refundHistoryCustomers(projectId: UUID, environments: [StoreEnvironment], limit: Int) throws
        -> [RefundHistoryCustomer]
    {
        try inner.refundHistoryCustomers(projectId: projectId, environments: environments, limit: limit)
    }

    public func setRefundRevision(projectId: UUID, customer: RefundHistoryCustomer, revision: String?, at: Date) throws {
        try inner.setRefundRevision(projectId: projectId, customer: customer, revision: revision, at: at)
    }

    public func catchUpCursor(projectId: UUID, environment: StoreEnvironment) throws -> Date? {
        try inner.catchUpCursor(projectId: projectId, environment: environment)
    }

    public func setCatchUpCursor(projectId: UUID, environment: StoreEnvironment, to: Date, now: Date) throws {
        try inner.setCatchUpCursor(projectId: projectId, environment: environment, to: to, now: now)
    }

    public func runs(projectId: UUID, limit: Int, changesPerRun: Int) throws -> [ReconcileReport] {
        try inner.runs(projectId: projectId, limit: limit, changesPerRun: changesPerRun)
    }
}
