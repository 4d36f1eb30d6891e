public import Domain
public import Foundation
public import Postgres

/// A `CustomerStore` that announces the user whose `GET /v1/subscriptions` answer a grant, a removal or an erasure
/// changed (this instance at once, the others through `CacheSynchronizer`), after the inner call returns.
public final class AnnouncingCustomerStore: AnnouncingStore<any CustomerStore>, @unchecked Sendable, CustomerStore {
    public func createGrant(_ grant: Grant, projectId: UUID) throws -> Grant {
        try announcing(projectId, grant.userId) { try inner.createGrant(grant, projectId: projectId) }
    }

    public func revokeGrant(projectId: UUID, userId: String, grantId: UUID, now: Date) throws -> Grant? {
        try announcing(projectId, userId) {
            try inner.revokeGrant(projectId: projectId, userId: userId, grantId: grantId, now: now)
        }
    }

    public func facts(projectId: UUID, userId: String) throws -> CustomerFacts {
        try inner.facts(projectId: projectId, userId: userId)
    }

    public func transactionHolders(projectId: UUID, transactionId: String) throws -> TransactionHolders? {
        try inner.transactionHolders(projectId: projectId, transactionId: transactionId)
    }

    public func purchaseHolders(projectId: UUID, environment: StoreEnvironment, originalTransactionIds: [String]) throws
        -> [String: [String]]
    {
        try inner.purchaseHolders(projectId: projectId, environment: environment,
                                  originalTransactionIds: originalTransactionIds)
    }

    public func erase(projectId: UUID, userId: String, now: Date) throws -> ErasureSummary {
        try announcing(projectId, userId) { try inner.erase(projectId: projectId, userId: userId, now: now) }
    }

    /// Runs `body`, then announces the user (see `AnnouncingStore.announcing`).
    private func announcing<T>(_ projectId: UUID, _ userId: String?, _ body: () throws -> T) throws -> T {
        try announcing(userId.map { [CacheMessage.user(projectId, userId: $0)] } ?? [], body)
    }
}

extension CacheSynchronizer {
    /// Sends `messages` on the cache channel now, from a process that runs no synchronizer (the `bouncer user` CLI),
    /// so running servers forget what it changed. A failure is only logged: their read caches' maximum age bounds it.
    public static func notify(pool: ConnectionPool, _ messages: [CacheMessage], log: (String) -> Void = { _ in }) {
        guard !messages.isEmpty else { return }
        do {
            try CacheMessage.send(messages, origin: UUID(), pool: pool)
        } catch {
            log("cache: could not announce \(messages.count) changes (\(error))")
        }
    }
}
