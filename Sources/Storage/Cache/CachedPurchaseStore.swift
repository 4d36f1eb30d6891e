import Domain
import Foundation

/// A `PurchaseStore` whose `ownedPurchases` reads go through a `PurchaseReadCache`, and whose writes announce what
/// they changed (`announce`: this instance at once, the others through `CacheSynchronizer`) after the inner call
/// returns, so the inner store's statements stay its own.
public final class CachedPurchaseStore: PurchaseStore {
    private let inner: any PurchaseStore
    private let cache: PurchaseReadCache
    private let announce: @Sendable ([CacheMessage]) -> Void

    /// Wraps `inner`.
    public init(inner: any PurchaseStore, cache: PurchaseReadCache, announce: @escaping @Sendable ([CacheMessage]) -> Void) {
        self.inner = inner
        self.cache = cache
        self.announce = announce
    }

    /// Records through the inner store, then announces the purchase (every user holding it, including one a
    /// transfer just revoked) and the posted user (who may hold it now). Also after a `.serviceUnavailable`, which
    /// may hide a commit whose answer was lost.
    public func recordTransaction(
        _ transaction: TransactionFacts, userId: String?, deviceId: String?, project: Project, now: Date
    ) throws -> RecordedTransaction {
        var messages = [CacheMessage.purchase(
            project.id, environment: transaction.environment.rawValue,
            originalTransactionId: transaction.originalTransactionId)]
        if let userId { messages.append(.user(project.id, userId: userId)) }
        do {
            let recorded = try inner.recordTransaction(
                transaction, userId: userId, deviceId: deviceId, project: project, now: now)
            announce(messages)
            return recorded
        } catch let error as DomainError where error.code == .serviceUnavailable {
            announce(messages)
            throw error
        }
    }

    /// From the cache when a current entry exists; otherwise one query, remembered unless a write raced it.
    /// Renewal info comes without its raw signed payload (`payloadJSON` is empty): the read API never shows it, it
    /// stays in the database, and dropping it keeps a user holding one purchase near 1 KB of cache (measured) instead
    /// of about twice that.
    public func ownedPurchases(userId: String, project: Project) throws -> [OwnedPurchase] {
        if let cached = cache.lookup(projectId: project.id, userId: userId) { return cached }
        let ticket = cache.ticket()
        let startedAt = cache.now()
        let owned = try inner.ownedPurchases(userId: userId, project: project).map { owned in
            var slim = owned
            slim.purchase.renewal?.payloadJSON = ""
            return slim
        }
        cache.fill(projectId: project.id, userId: userId, owned: owned, ticket: ticket, at: startedAt)
        return owned
    }
}

/// A `NotificationStore` that announces the purchase a processed notification changed (every user bound to it
/// reads again), after the inner call returns.
public final class AnnouncingNotificationStore: NotificationStore {
    private let inner: any NotificationStore
    private let announce: @Sendable ([CacheMessage]) -> Void

    /// Wraps `inner`.
    public init(inner: any NotificationStore, announce: @escaping @Sendable ([CacheMessage]) -> Void) {
        self.inner = inner
        self.announce = announce
    }

    public func recordNotification(_ notification: NotificationFacts, project: Project, now: Date) throws
        -> NotificationOutcome
    {
        var messages: [CacheMessage] = []
        if let t = notification.transaction {
            messages.append(.purchase(project.id, environment: t.environment.rawValue,
                                      originalTransactionId: t.originalTransactionId))
        }
        if let r = notification.renewal {
            let message = CacheMessage.purchase(project.id, environment: r.environment.rawValue,
                                                originalTransactionId: r.originalTransactionId)
            if !messages.contains(message) { messages.append(message) }
        }
        do {
            let outcome = try inner.recordNotification(notification, project: project, now: now)
            if outcome == .processed, !messages.isEmpty { announce(messages) }
            return outcome
        } catch let error as DomainError where error.code == .serviceUnavailable {
            if !messages.isEmpty { announce(messages) }
            throw error
        }
    }

    public func notifications(projectId: UUID, originalTransactionId: String?, limit: Int) throws
        -> [StoredNotification]
    {
        try inner.notifications(projectId: projectId, originalTransactionId: originalTransactionId, limit: limit)
    }
}
