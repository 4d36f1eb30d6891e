public import Foundation

// What a reconciliation run reads, finds and reports, and its limits; the run itself is `Reconciliation`.

/// Who started a reconciliation run.
public enum ReconcileTrigger: String, Sendable, CaseIterable {
    /// The scheduler of `bouncer serve` (every `BOUNCER_RECONCILE_INTERVAL_SECONDS`).
    case schedule
    /// `POST /v1/admin/projects/{id}/reconcile`.
    case admin
    /// `bouncer reconcile`.
    case cli
}

/// How a run learned the fact it applied.
public enum ReconcileVia: String, Sendable {
    /// Get All Subscription Statuses for a known auto-renewable subscription.
    case subscriptionStatus = "subscription_status"
    /// Get Transaction Info for a known non-consumable or non-renewing purchase.
    case transactionInfo = "transaction_info"
    /// A notification recovered from Notification History (applied as if the webhook had received it).
    case notificationHistory = "notification_history"
    /// Get Refund History of a customer (an Apple account) of the project.
    case refundHistory = "refund_history"
}

/// How a run ended.
public enum ReconcileOutcome: String, Sendable {
    /// Still running (or the process died while it ran).
    case running
    /// Every candidate was checked and every history page read.
    case completed
    /// Finished, but something was skipped (the rate budget) or failed for single purchases or payloads: the next
    /// run continues (purchases checked longest ago first; history from the last complete pass).
    case partial
    /// Stopped early: Apple was unavailable or refused our credentials, or the database failed.
    case failed
}

/// A purchase a run asks Apple about.
public struct ReconcileCandidate: Sendable, Equatable {
    /// The purchase's environment (Production or Sandbox: only Apple-signed purchases are checked).
    public var environment: StoreEnvironment
    /// The purchase.
    public var originalTransactionId: String
    /// Its latest known transaction (what Get Transaction Info asks about).
    public var latestTransactionId: String
    /// Its product type.
    public var type: ProductType

    /// Creates a value.
    public init(environment: StoreEnvironment, originalTransactionId: String, latestTransactionId: String,
                type: ProductType) {
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.latestTransactionId = latestTransactionId
        self.type = type
    }
}

/// One customer (an Apple account) whose refund history a run reads: purchases sharing an `appTransactionId` are
/// one account; a purchase without one stands for its own account.
public struct RefundHistoryCustomer: Sendable, Equatable {
    /// The environment of the customer's purchases.
    public var environment: StoreEnvironment
    /// `app:<appTransactionId>` or `purchase:<originalTransactionId>`.
    public var key: String
    /// Any of the customer's transactions (what Get Refund History is asked about).
    public var transactionId: String
    /// The revision the last read of this customer ended at; `nil`: from the start.
    public var revision: String?

    /// Creates a value.
    public init(environment: StoreEnvironment, key: String, transactionId: String, revision: String?) {
        self.environment = environment
        self.key = key
        self.transactionId = transactionId
        self.revision = revision
    }
}

/// What applying one verified transaction did: the purchase's change, and whether it recorded a new refund.
public struct ReconcileApplied: Sendable, Equatable {
    /// The purchase's change, when it changed.
    public var change: ReconcileChange?
    /// The transaction was not revoked before and is now (a refund Apple had not notified us of).
    public var newRefund: Bool

    /// Creates a value.
    public init(change: ReconcileChange?, newRefund: Bool) {
        self.change = change
        self.newRefund = newRefund
    }
}

/// What a run changed about one purchase, recorded with the source `reconcile`.
public struct ReconcileChange: Sendable, Equatable {
    /// The run.
    public var runId: Int64
    /// The purchase's environment.
    public var environment: StoreEnvironment
    /// The purchase.
    public var originalTransactionId: String
    /// How the run learned it.
    public var via: ReconcileVia
    /// The recovered notification, for `.notificationHistory`.
    public var notificationUUID: UUID?
    /// Its `notificationType`, for `.notificationHistory`.
    public var notificationType: String?
    /// The purchase's latest transaction after the change.
    public var latestTransactionId: String
    /// Status before (at the run's clock); `nil` when the purchase was not known.
    public var beforeStatus: EntitlementStatus?
    /// Status after.
    public var afterStatus: EntitlementStatus
    /// End of the period before.
    public var beforeExpiresDate: Date?
    /// End of the period after.
    public var afterExpiresDate: Date?
    /// Revocation (refund) date before.
    public var beforeRevocationDate: Date?
    /// Revocation (refund) date after.
    public var afterRevocationDate: Date?
    /// When it was applied.
    public var at: Date

    /// Creates a value.
    public init(
        runId: Int64, environment: StoreEnvironment, originalTransactionId: String, via: ReconcileVia,
        notificationUUID: UUID? = nil, notificationType: String? = nil, latestTransactionId: String,
        beforeStatus: EntitlementStatus?, afterStatus: EntitlementStatus, beforeExpiresDate: Date? = nil,
        afterExpiresDate: Date? = nil, beforeRevocationDate: Date? = nil, afterRevocationDate: Date? = nil, at: Date
    ) {
        self.runId = runId
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.via = via
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.latestTransactionId = latestTransactionId
        self.beforeStatus = beforeStatus
        self.afterStatus = afterStatus
        self.beforeExpiresDate = beforeExpiresDate
        self.afterExpiresDate = afterExpiresDate
        self.beforeRevocationDate = beforeRevocationDate
        self.afterRevocationDate = afterRevocationDate
        self.at = at
    }

    /// The change between two stored states of a purchase, or `nil` when nothing changed (`before == after`).
    /// Statuses are `StatusRules.evaluate` at `now`.
    public static func between(
        _ before: PurchaseState?, _ after: PurchaseState, runId: Int64, via: ReconcileVia,
        notification: NotificationFacts? = nil, at now: Date
    ) -> ReconcileChange? {
        guard before != after else { return nil }
        return ReconcileChange(
            runId: runId, environment: after.environment, originalTransactionId: after.originalTransactionId,
            via: via, notificationUUID: notification?.notificationUUID, notificationType: notification?.type,
            latestTransactionId: after.latestTransactionId,
            beforeStatus: before.map { StatusRules.evaluate($0, at: now).status },
            afterStatus: StatusRules.evaluate(after, at: now).status,
            beforeExpiresDate: before?.expiresDate, afterExpiresDate: after.expiresDate,
            beforeRevocationDate: before?.revocationDate, afterRevocationDate: after.revocationDate, at: now)
    }
}

/// One thing a run could not do (safe to show an admin: ids, Apple's codes, our reasons; never a JWS or key).
public struct ReconcileProblem: Sendable, Equatable {
    /// `subscription_status`, `transaction_info`, `notification_history` or `budget`.
    public var stage: String
    /// The environment concerned.
    public var environment: StoreEnvironment?
    /// The purchase concerned, when one.
    public var originalTransactionId: String?
    /// What happened.
    public var message: String

    /// Creates a value.
    public init(stage: String, environment: StoreEnvironment? = nil, originalTransactionId: String? = nil,
                message: String) {
        self.stage = stage
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.message = message
    }
}

/// A run's counts, as the admin API answers and `reconcile_runs` keeps them.
public struct ReconcileReport: Sendable, Equatable {
    /// The run (`reconcile_runs.id`).
    public var runId: Int64
    /// The project.
    public var projectId: UUID
    /// Who started it.
    public var trigger: ReconcileTrigger
    /// When it started.
    public var startedAt: Date
    /// When it ended.
    public var finishedAt: Date?
    /// How it ended.
    public var outcome: ReconcileOutcome
    /// Purchases Apple answered about.
    public var checked = 0
    /// Purchases whose stored state changed (one per applied fact that changed something).
    public var changed = 0
    /// Notifications recovered from Notification History that were new (not delivered before).
    public var notificationsApplied = 0
    /// Refunds Apple never notified: transactions the run was first to record as refunded (revoked), whichever
    /// check found them (a refund recovered from Notification History was notified, so it is not counted).
    public var refundsFound = 0
    /// Candidates left for the next run by the rate budget.
    public var skipped = 0
    /// Calls made to Apple.
    public var appleCalls = 0
    /// What failed (at most `ReconcileSettings.maxProblemsKept`; `errorCount` has the total).
    public var errors: [ReconcileProblem] = []
    /// Every problem, kept or not.
    public var errorCount = 0
    /// The changes, when listed (`Reconciliation.runs`).
    public var changes: [ReconcileChange] = []

    /// Creates a value.
    public init(runId: Int64, projectId: UUID, trigger: ReconcileTrigger, startedAt: Date, finishedAt: Date? = nil,
                outcome: ReconcileOutcome = .running) {
        self.runId = runId
        self.projectId = projectId
        self.trigger = trigger
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.outcome = outcome
    }
}

/// The limits of a run (`BOUNCER_RECONCILE_*`).
public struct ReconcileSettings: Sendable, Equatable {
    /// Apple calls per project and run (`BOUNCER_RECONCILE_MAX_CALLS`, default 1000).
    public var maxCallsPerRun = 1_000
    /// Apple calls per project and second (`BOUNCER_RECONCILE_CALLS_PER_SECOND`, default 10; Apple's documented
    /// hourly limits per endpoint are in the thousands).
    public var callsPerSecond = 10.0
    /// Calls of the budget kept for Notification History pages (the purchase checks stop before them).
    public var historyReserve = 25
    /// Get Refund History pages read per customer and run (20 refunds a page, as Apple documents); the rest waits
    /// for the next run, from the revision reached.
    public var refundPagesPerCustomer = 5
    /// "Not long expired": subscriptions whose period (or grace period) ended less than this ago are checked.
    public var expiredWindow: TimeInterval = 60 * 86_400
    /// Each history pass starts this long before the last complete one ended: Apple may list a notification a
    /// little after it was signed, and what is read twice is deduplicated by `notificationUUID`.
    public var historyOverlap: TimeInterval = 3_600
    /// Problems kept in a report (the count goes on).
    public var maxProblemsKept = 100

    /// Apple keeps Notification History for 180 days; the first pass of a project (no cursor yet) starts there,
    /// an hour inside the edge so Apple does not refuse the start date.
    public static let historyLookback: TimeInterval = 180 * 86_400 - 3_600

    /// Defaults.
    public init() {}
}
