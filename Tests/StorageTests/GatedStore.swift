import Domain
import Foundation
import Storage
import Synchronization

/// The PostgreSQL store, counting `holdings` queries; while closed (from the start unless `open`), each query's
/// answer is held after it ran until `open()`.
final class GatedStore: PurchaseStore {
    private let inner: PostgresPurchaseStore
    private let held: Mutex<Bool>
    private let count = Atomic<Int>(0)

    init(inner: PostgresPurchaseStore, open: Bool = false) {
        self.inner = inner
        held = Mutex(!open)
    }

    var queries: Int { count.load(ordering: .acquiring) }

    func waitUntilQueried(_ n: Int) {
        while queries < n { usleep(1_000) }
    }

    /// Lets every held query and every later one answer.
    func open() { held.withLock { $0 = false } }

    /// Holds the queries that run from now on.
    func close() { held.withLock { $0 = true } }

    func holdings(userId: String, project: Project) throws -> UserHoldings {
        let holdings = try inner.holdings(userId: userId, project: project)
        count.add(1, ordering: .releasing)
        while held.withLock({ $0 }) { usleep(1_000) }
        return holdings
    }

    func ownedPurchases(userId: String, project: Project) throws -> [OwnedPurchase] {
        try holdings(userId: userId, project: project).purchases
    }

    func recordTransaction(
        _ transaction: TransactionFacts, userId: String?, deviceId: String?, project: Project, now: Date
    ) throws -> RecordedTransaction {
        try inner.recordTransaction(transaction, userId: userId, deviceId: deviceId, project: project, now: now)
    }

    func recordTransactions(
        _ transactions: [TransactionFacts], source: TransactionSource, userId: String?, deviceId: String?,
        project: Project, now: Date
    ) throws -> [RecordedTransaction] {
        try inner.recordTransactions(transactions, source: source, userId: userId, deviceId: deviceId,
                                     project: project, now: now)
    }
}
