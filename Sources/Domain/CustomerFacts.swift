public import Foundation

/// Everything stored about one user of a project: what the timeline explains and the export shows.
///
/// Gathered by `CustomerStore.facts` in one read-only database transaction; the rules that turn it into a timeline
/// (`CustomerTimeline.build`) are pure.
public struct CustomerFacts: Sendable, Equatable {
    /// The user.
    public var userId: String
    /// Every purchase the user holds or held (a binding ended by a transfer is kept, with its `revokedAt`).
    public var purchases: [HeldPurchase] = []
    /// The transactions of those purchases (every renewal is its own).
    public var transactions: [TransactionRecord] = []
    /// The App Store notifications about those purchases.
    public var notifications: [NotificationRecord] = []
    /// What reconciliation with Apple changed on those purchases.
    public var reconcileChanges: [ReconcileChangeRecord] = []
    /// Ownership moves from or to the user.
    public var ownershipEvents: [OwnershipEventRecord] = []
    /// The user's manual grants, removed ones included.
    public var grants: [Grant] = []
    /// App transactions bound to the user.
    public var appTransactions: [AppTransactionRecord] = []
    /// Each product's entitlements (of the products of `purchases` and `transactions` that are mapped).
    public var productEntitlements: [String: [String]] = [:]
    /// What the Get Retention Message endpoint answered about those purchases.
    public var retentionDecisions: [RetentionDecisionRecord] = []

    /// Facts about a user of whom nothing is stored.
    public init(userId: String) {
        self.userId = userId
    }

    /// Whether nothing at all is stored about the user.
    public var isEmpty: Bool {
        purchases.isEmpty && transactions.isEmpty && notifications.isEmpty && reconcileChanges.isEmpty
            && ownershipEvents.isEmpty && grants.isEmpty && appTransactions.isEmpty && retentionDecisions.isEmpty
    }
}

/// A purchase with the user's binding to it.
public struct HeldPurchase: Sendable, Equatable {
    /// The purchase's current state.
    public var purchase: PurchaseState
    /// What its current product grants while active.
    public var entitlements: [String]
    /// The device id last posted with it for this user.
    public var deviceId: String?
    /// When the user got it (again).
    public var boundAt: Date
    /// When the user lost it to a transfer; nil while held.
    public var revokedAt: Date?

    /// Creates a value.
    public init(purchase: PurchaseState, entitlements: [String], deviceId: String?, boundAt: Date, revokedAt: Date?) {
        self.purchase = purchase
        self.entitlements = entitlements
        self.deviceId = deviceId
        self.boundAt = boundAt
        self.revokedAt = revokedAt
    }
}

/// One stored transaction.
public struct TransactionRecord: Sendable, Equatable {
    /// Apple's transaction id.
    public var transactionId: String
    /// Its purchase.
    public var originalTransactionId: String
    /// Its environment.
    public var environment: StoreEnvironment
    /// Its product.
    public var productId: String
    /// When it was bought or renewed.
    public var purchaseDate: Date
    /// When its period ends.
    public var expiresDate: Date?
    /// When it was refunded or revoked.
    public var revocationDate: Date?
    /// How (a full or partial refund, a Family Sharing revocation), when Apple said.
    public var revocationType: RevocationType?
    /// Apple's `revocationReason` (0 other, 1 an issue in the app), given for refunds.
    public var revocationReason: Int?
    /// How Bouncer learned it: `receipt`, `lookup`, `notification`, `reconcile`; nil for rows older than the column.
    public var source: String?
    /// When Bouncer first stored it.
    public var firstSeenAt: Date
    /// The verified payload as stored (JSON text; for the export).
    public var payloadJSON: String
    /// When Apple took Finish Transaction for it (`finish_transactions`).
    public var finishedAt: Date?

    /// Creates a value.
    public init(transactionId: String, originalTransactionId: String, environment: StoreEnvironment, productId: String,
                purchaseDate: Date, expiresDate: Date?, revocationDate: Date?, revocationType: RevocationType?,
                source: String?, firstSeenAt: Date, payloadJSON: String, revocationReason: Int? = nil,
                finishedAt: Date? = nil) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.productId = productId
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.revocationDate = revocationDate
        self.revocationType = revocationType
        self.revocationReason = revocationReason
        self.source = source
        self.firstSeenAt = firstSeenAt
        self.payloadJSON = payloadJSON
        self.finishedAt = finishedAt
    }
}

/// One stored App Store notification about a purchase of the user.
public struct NotificationRecord: Sendable, Equatable {
    /// Apple's id for it.
    public var notificationUUID: UUID
    /// `notificationType`, raw.
    public var type: String
    /// `subtype`, raw.
    public var subtype: String?
    /// The purchase.
    public var originalTransactionId: String
    /// When Bouncer stored it.
    public var receivedAt: Date
    /// `notification` (Apple delivered it) or `reconcile` (caught up from Apple's history).
    public var source: String

    /// Creates a value.
    public init(notificationUUID: UUID, type: String, subtype: String?, originalTransactionId: String, receivedAt: Date,
                source: String) {
        self.notificationUUID = notificationUUID
        self.type = type
        self.subtype = subtype
        self.originalTransactionId = originalTransactionId
        self.receivedAt = receivedAt
        self.source = source
    }
}

/// One change reconciliation made to a purchase of the user.
public struct ReconcileChangeRecord: Sendable, Equatable {
    /// The purchase.
    public var originalTransactionId: String
    /// How the run learned it (`subscription_status`, `transaction_info`, `notification_history`).
    public var via: String
    /// The purchase's latest transaction after the change.
    public var latestTransactionId: String
    /// Status before (nil: unknown before the run) and after.
    public var beforeStatus: String?
    /// Status after.
    public var afterStatus: String
    /// Expiry after.
    public var afterExpiresDate: Date?
    /// When.
    public var at: Date

    /// Creates a value.
    public init(originalTransactionId: String, via: String, latestTransactionId: String, beforeStatus: String?,
                afterStatus: String, afterExpiresDate: Date?, at: Date) {
        self.originalTransactionId = originalTransactionId
        self.via = via
        self.latestTransactionId = latestTransactionId
        self.beforeStatus = beforeStatus
        self.afterStatus = afterStatus
        self.afterExpiresDate = afterExpiresDate
        self.at = at
    }
}

/// A purchase moving between users under the project's transfer policy.
public struct OwnershipEventRecord: Sendable, Equatable {
    /// The purchase.
    public var originalTransactionId: String
    /// The user who lost it (nil once erased).
    public var fromUserId: String?
    /// The user who got it (nil once erased).
    public var toUserId: String?
    /// The policy that decided (`transfer`).
    public var policy: String
    /// When.
    public var at: Date

    /// Creates a value.
    public init(originalTransactionId: String, fromUserId: String?, toUserId: String?, policy: String, at: Date) {
        self.originalTransactionId = originalTransactionId
        self.fromUserId = fromUserId
        self.toUserId = toUserId
        self.policy = policy
        self.at = at
    }
}

/// An app transaction bound to the user, with when Bouncer first saw it.
public struct AppTransactionRecord: Sendable, Equatable {
    /// The stored app transaction.
    public var appTransaction: StoredAppTransaction
    /// When Bouncer first stored it.
    public var firstSeenAt: Date

    /// Creates a value.
    public init(appTransaction: StoredAppTransaction, firstSeenAt: Date) {
        self.appTransaction = appTransaction
        self.firstSeenAt = firstSeenAt
    }
}

/// What erasing a user changed (row counts).
public struct ErasureSummary: Sendable, Equatable {
    /// Bindings (`subscriptions` rows, with their device ids) deleted.
    public var bindingsDeleted: Int = 0
    /// Grants unlinked from the user (kept, without user and reason).
    public var grantsAnonymised: Int = 0
    /// App transactions unbound from the user.
    public var appTransactionsUnbound: Int = 0
    /// Ownership events whose user ids were cleared.
    public var ownershipEventsAnonymised: Int = 0
    /// Transactions and purchases whose `appAccountToken` was the user id, cleared.
    public var appAccountTokensCleared: Int = 0
    /// Webhook events about the user dropped (pending) or anonymised (delivered).
    public var eventsDropped: Int = 0
    /// See `eventsDropped`.
    public var eventsAnonymised: Int = 0

    /// Creates a value.
    public init() {}
}

/// One real-time retention decision about a purchase of the user.
public struct RetentionDecisionRecord: Sendable, Equatable {
    /// The purchase.
    public var originalTransactionId: String
    /// The product the customer viewed.
    public var productId: String
    /// `message`, `alternate_product`, `promotional_offer` or `default` (no rule matched).
    public var action: String
    /// Why.
    public var reason: String
    /// When Bouncer answered.
    public var at: Date

    /// Creates a value.
    public init(originalTransactionId: String, productId: String, action: String, reason: String, at: Date) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.action = action
        self.reason = reason
        self.at = at
    }
}
