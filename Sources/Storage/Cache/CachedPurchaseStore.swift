public import Domain
public import Foundation

/// A `PurchaseStore` whose `ownedPurchases` reads go through a `PurchaseReadCache`, and whose writes announce what
/// they changed (`announce`: this instance at once, the others through `CacheSynchronizer`) after the inner call
/// returns, so the inner store's statements stay its own.
public final class CachedPurchaseStore: AnnouncingStore<any PurchaseStore>, @unchecked Sendable, PurchaseStore {
    private let cache: PurchaseReadCache

    /// Wraps `inner`.
    public init(inner: any PurchaseStore, cache: PurchaseReadCache, announce: @escaping @Sendable ([CacheMessage]) -> Void) {
        self.cache = cache
        super.init(inner: inner, announce: announce)
        cache.attachRefresh { [inner] project, userId in try Self.slimHoldings(inner, userId: userId, project: project) }
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
        return try announcing(messages) {
            try inner.recordTransaction(transaction, userId: userId, deviceId: deviceId, project: project, now: now)
        }
    }

    /// Records through the inner store (one database transaction), then announces every purchase the transactions
    /// belong to (once each) and the posted user, as `recordTransaction` does.
    public func recordTransactions(
        _ transactions: [TransactionFacts], source: TransactionSource, userId: String?, deviceId: String?,
        project: Project, now: Date
    ) throws -> [RecordedTransaction] {
        var messages: [CacheMessage] = []
        var seen = Set<String>()
        for t in transactions where seen.insert(t.environment.rawValue + "/" + t.originalTransactionId).inserted {
            messages.append(.purchase(project.id, environment: t.environment.rawValue,
                                      originalTransactionId: t.originalTransactionId))
        }
        if let userId { messages.append(.user(project.id, userId: userId)) }
        return try announcing(messages) {
            try inner.recordTransactions(
                transactions, source: source, userId: userId, deviceId: deviceId, project: project, now: now)
        }
    }

    /// The user's purchases (see `holdings`).
    public func ownedPurchases(userId: String, project: Project) throws -> [OwnedPurchase] {
        try holdings(userId: userId, project: project).purchases
    }

    /// From the cache when a current entry exists; otherwise one query per user at a time (readers of a user whose
    /// query is in flight wait for its answer: `PurchaseReadCache.read`), remembered unless a write raced it.
    /// Renewal info comes without its raw signed payload (`payloadJSON` is empty): the read API never shows it, it
    /// stays in the database, and dropping it keeps a user holding one purchase near 1 KB of cache (measured) instead
    /// of about twice that.
    public func holdings(userId: String, project: Project) throws -> UserHoldings {
        switch cache.read(project: project, userId: userId) {
        case .hit(let holdings):
            return holdings
        case .alone(let ticket):
            return try query(userId: userId, project: project, ticket: ticket)
        case .query(let flight):
            let startedAt = cache.now()
            do {
                let holdings = try slimHoldings(userId: userId, project: project)
                cache.finish(flight, projectId: project.id, userId: userId, result: .success(holdings), at: startedAt)
                return holdings
            } catch {
                cache.finish(flight, projectId: project.id, userId: userId, result: .failure(error), at: startedAt)
                throw error
            }
        case .wait(let flight):
            switch flight.wait() {
            case .current(let holdings): return holdings
            case .failed(let error): throw error
            // A write touched the user while the query ran: read again, alone (at most one wait per request).
            case .stale: return try query(userId: userId, project: project, ticket: cache.ticket())
            }
        }
    }

    /// From the cache only: a current entry (a hit, as `holdings` counts it), else nil with nothing counted.
    public func holdingsInMemory(userId: String, project: Project) -> UserHoldings? {
        cache.current(project: project, userId: userId)
    }

    /// One query begun after `ticket`, filled into the cache unless a write raced it.
    private func query(userId: String, project: Project, ticket: UInt64) throws -> UserHoldings {
        let startedAt = cache.now()
        let holdings = try slimHoldings(userId: userId, project: project)
        cache.fill(projectId: project.id, userId: userId, holdings: holdings, ticket: ticket, at: startedAt)
        return holdings
    }

    private func slimHoldings(userId: String, project: Project) throws -> UserHoldings {
        try Self.slimHoldings(inner, userId: userId, project: project)
    }

    private static func slimHoldings(_ inner: any PurchaseStore, userId: String, project: Project) throws
        -> UserHoldings
    {
        var holdings = try inner.holdings(userId: userId, project: project)
        holdings.purchases = holdings.purchases.map { owned in
            var slim = owned
            slim.purchase.renewal?.payloadJSON = ""
            return slim
        }
        return holdings
    }
}

/// An `AppTransactionStore` that announces the users whose answer a write changed (the one posted, and the one it
/// was bound to before), after the inner call returns.
public final class AnnouncingAppTransactionStore: AnnouncingStore<any AppTransactionStore>, @unchecked Sendable, AppTransactionStore {
    public func recordAppTransaction(_ facts: AppTransactionFacts, userId: String?, project: Project, now: Date) throws
        -> RecordedAppTransaction
    {
        do {
            let recorded = try inner.recordAppTransaction(facts, userId: userId, project: project, now: now)
            var messages: [CacheMessage] = []
            if let userId { messages.append(.user(project.id, userId: userId)) }
            if let previous = recorded.previousUserId { messages.append(.user(project.id, userId: previous)) }
            if !messages.isEmpty { announce(messages) }
            return recorded
        } catch let error as DomainError where error.code == .serviceUnavailable {
            // A lost answer may hide a commit: the posted user reads again (a previous holder is unknown here; the
            // cache's maxAge bounds it).
            if let userId { announce([.user(project.id, userId: userId)]) }
            throw error
        }
    }
}

/// A `NotificationStore` that announces the purchase a processed notification changed (every user bound to it
/// reads again), after the inner call returns.
public final class AnnouncingNotificationStore: AnnouncingStore<any NotificationStore>, @unchecked Sendable, NotificationStore {
    public func recordNotification(_ notification: NotificationFacts, project: Project, now: Date) throws
        -> NotificationOutcome
    {
        var messages: [CacheMessage] = []
        if let t = notification.transaction {
            messages.append(.purchase(project.id, environment: t.environment.rawValue,
                                      originalTransactionId: t.originalTransactionId))
        }
        // A consent withdrawal changes the answer of whoever holds the app transaction; the store does not say who,
        // and RESCIND_CONSENT is rare: the project's cached users read again.
        if notification.appTransaction != nil, NotificationRules.consentRescindedAt(by: notification, receivedAt: now) != nil {
            messages.append(.allUsers(project.id))
        }
        if let r = notification.renewal {
            let message = CacheMessage.purchase(project.id, environment: r.environment.rawValue,
                                                originalTransactionId: r.originalTransactionId)
            if !messages.contains(message) { messages.append(message) }
        }
        return try announcing(messages, changed: { $0 == .processed }) {
            try inner.recordNotification(notification, project: project, now: now)
        }
    }

    public func notifications(projectId: UUID, originalTransactionId: String?, limit: Int) throws
        -> [StoredNotification]
    {
        try inner.notifications(projectId: projectId, originalTransactionId: originalTransactionId, limit: limit)
    }
}
