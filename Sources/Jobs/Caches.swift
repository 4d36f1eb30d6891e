public import Domain
import Foundation
import Glibc
import Postgres
public import Storage

/// How much `bouncer serve` keeps in memory, and how long an entry may live without a confirmation.
public struct CacheSettings: Sendable {
    /// `BOUNCER_READ_CACHE_SIZE`: users whose bound purchases are cached; 0 = every read queries.
    public var readCacheSize = 20_000
    /// `BOUNCER_READ_CACHE_MAX_AGE_SECONDS`: the bound on a cached read when an announcement is lost.
    public var readMaxAge: Duration = .seconds(10)
    /// `BOUNCER_CACHE_REFRESH_SECONDS`: every project is reloaded this often.
    public var refreshInterval: Duration = .seconds(60)

    /// The defaults.
    public init() {}
}

/// Projects and user reads served from memory, kept true across instances: the cached stores, the `LISTEN`
/// session (`bouncer-listener-<pid>` in `pg_stat_activity`) and the announcer, each on its own thread (`start`).
public final class Caches: Service {
    /// Projects from memory.
    public let projects: CachedProjectStore
    /// Purchases, with the read cache when it is on; announces each change.
    public let purchases: any PurchaseStore
    /// Notifications; announces each change.
    public let notifications: any NotificationStore
    /// App transactions; announces each change.
    public let appTransactions: any AppTransactionStore
    /// Customers (grants, erase); announces each change.
    public let customers: any CustomerStore
    private let synchronizer: CacheSynchronizer
    private let announce: @Sendable ([CacheMessage]) -> Void
    private let reads: PurchaseReadCache?
    private let purchaseStore: PostgresPurchaseStore
    private let listening: Job
    private let announcer: Job

    /// What the caches report at scrape time (`/metrics`).
    public struct Statistics: Sendable {
        /// Projects are answered from memory (the invalidation channel listens).
        public var live: Bool
        /// Subscription reads answered from memory.
        public var readHits: Int
        /// Subscription reads that queried (the cache was off, or had no current entry).
        public var readMisses: Int
        /// `NOTIFY` payloads this instance sent for receipts and notifications.
        public var announcements: Int
        /// Background refreshes of read-cache entries: refreshed, discarded (a write raced), dropped (queue full),
        /// failed.
        public var readRefreshes = PurchaseReadCache.RefreshCounts()
    }

    /// Wraps the database stores; `start` starts the listener and announcer threads. `receiptBatchMax`: the purchase
    /// store's group commit (1 = off), `receiptBatches` its batches written at once. `committed` runs after each
    /// write that changed something (with its announcement), e.g. to wake the webhook deriver.
    public init(database: Database, settings: CacheSettings, xcodeTransactionLimit: Int, receiptBatchMax: Int,
         receiptBatches: Int, log: @escaping @Sendable (String) -> Void,
         committed: @escaping @Sendable () -> Void = {}) {
        let reads = settings.readCacheSize > 0
            ? PurchaseReadCache(capacity: settings.readCacheSize, maxAge: settings.readMaxAge) : nil
        let projects = CachedProjectStore(inner: PostgresProjectStore(pool: database.pool)) { id in
            reads?.invalidate([.project(id)])
        }
        let synchronizer = CacheSynchronizer(
            pool: database.pool, projects: projects, reads: reads, refreshInterval: settings.refreshInterval,
            log: { log(jsonLine("cache", $0)) })
        let announce: @Sendable ([CacheMessage]) -> Void = {
            synchronizer.announce($0)
            committed()
        }
        let purchaseStore = PostgresPurchaseStore(pool: database.pool, xcodeTransactionLimit: xcodeTransactionLimit,
                                                  receiptBatchMax: receiptBatchMax, concurrentBatches: receiptBatches)
        self.projects = projects
        self.purchaseStore = purchaseStore
        self.purchases = reads.map { CachedPurchaseStore(inner: purchaseStore, cache: $0, announce: announce) }
            ?? purchaseStore
        self.notifications = AnnouncingNotificationStore(
            inner: PostgresNotificationStore(pool: database.pool, xcodeTransactionLimit: xcodeTransactionLimit),
            announce: announce)
        self.customers = AnnouncingCustomerStore(inner: PostgresCustomerStore(pool: database.pool), announce: announce)
        self.appTransactions = AnnouncingAppTransactionStore(
            inner: PostgresAppTransactionStore(pool: database.pool), announce: announce)
        self.synchronizer = synchronizer
        self.announce = announce
        self.reads = reads
        var listenerSettings = database.pool.settings
        listenerSettings.applicationName = "bouncer-listener-\(getpid())"
        let listener = NotificationListener(
            settings: listenerSettings, channels: [CacheMessage.channel], handlers: synchronizer.listenerHandlers)
        announcer = Job(name: "bouncer-cache-announcer", onStop: { synchronizer.shutdown() }) { _ in
            synchronizer.run()
            return .finished
        }
        listening = Job(name: "bouncer-cache-listener", onStop: { listener.shutdown() }) { _ in
            listener.run()
            return .finished
        }
    }

    /// `caches`.
    public var name: String { "caches" }

    /// Starts the announcer and the listener.
    public func start() {
        announcer.start()
        listening.start()
    }

    /// Whether the announcer or the listener runs.
    public var isRunning: Bool { announcer.isRunning || listening.isRunning }

    /// `store` announcing what it changes (reconciliation writes bypass the cached purchase store).
    public func announcing(_ store: any ReconciliationStore) -> any ReconciliationStore {
        AnnouncingReconciliationStore(inner: store, announce: announce)
    }

    /// Counters for `/metrics`.
    public var statistics: Statistics {
        let counts = reads?.counts ?? (hits: 0, misses: 0)
        return Statistics(
            live: projects.isLive, readHits: counts.hits, readMisses: counts.misses,
            announcements: synchronizer.payloadsSent, readRefreshes: reads?.refreshCounts ?? .init())
    }

    /// The receipts' group commit so far (`/metrics`, and the derived work's yield).
    public var receiptBatches: PostgresPurchaseStore.BatchCounts { purchaseStore.batchCounts }

    /// Stops the listener (waiting at most 2 s), then sends pending announcements and stops the announcer (before
    /// the pool closes); `grace` is not used: both bounds are the synchronizer's and the listener's own.
    public func stop(grace: Duration) {
        listening.stop(grace: .seconds(2))
        announcer.stop(grace: .seconds(2))
    }
}
