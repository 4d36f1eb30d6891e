import Domain
import Foundation
import Glibc
import Postgres
import Storage

/// How much `bouncer serve` keeps in memory, and how long an entry may live without a confirmation.
struct CacheSettings: Sendable {
    /// `BOUNCER_READ_CACHE_SIZE`: users whose bound purchases are cached; 0 = every read queries.
    var readCacheSize = 20_000
    /// `BOUNCER_READ_CACHE_MAX_AGE_SECONDS`: the bound on a cached read when an announcement is lost.
    var readMaxAge: Duration = .seconds(10)
    /// `BOUNCER_CACHE_REFRESH_SECONDS`: every project is reloaded this often.
    var refreshInterval: Duration = .seconds(60)
}

/// Projects and user reads served from memory, kept true across instances: the cached stores, the `LISTEN`
/// session (`bouncer-listener-<pid>` in `pg_stat_activity`) and the announcer, each on its own thread.
final class Caches: Sendable {
    let projects: CachedProjectStore
    let purchases: any PurchaseStore
    let notifications: any NotificationStore
    let appTransactions: any AppTransactionStore
    let customers: any CustomerStore
    private let synchronizer: CacheSynchronizer
    private let announce: @Sendable ([CacheMessage]) -> Void
    private let reads: PurchaseReadCache?
    private let listener: NotificationListener
    private let listenerDone = DispatchSemaphore(value: 0)

    /// Wraps the database stores and starts the listener and announcer threads. `receiptBatchMax`: the purchase
    /// store's group commit (1 = off). `committed` runs after each write that changed something (with its
    /// announcement), e.g. to wake the webhook deriver.
    init(database: Database, settings: CacheSettings, xcodeTransactionLimit: Int, receiptBatchMax: Int,
         log: @escaping @Sendable (String) -> Void, committed: @escaping @Sendable () -> Void = {}) {
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
                                                  receiptBatchMax: receiptBatchMax)
        self.projects = projects
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
        listener = NotificationListener(
            settings: listenerSettings, channels: [CacheMessage.channel], handlers: synchronizer.listenerHandlers)

        let announcer = Thread { synchronizer.run() }
        announcer.name = "bouncer-cache-announcer"
        announcer.start()
        let listening = Thread { [listener, listenerDone] in
            listener.run()
            listenerDone.signal()
        }
        listening.name = "bouncer-cache-listener"
        listening.start()
    }

    /// `store` announcing what it changes (reconciliation writes bypass the cached purchase store).
    func announcing(_ store: any ReconciliationStore) -> any ReconciliationStore {
        AnnouncingReconciliationStore(inner: store, announce: announce)
    }

    /// Counters for `/metrics`.
    var statistics: ServiceMetrics.CacheStatistics {
        let counts = reads?.counts ?? (hits: 0, misses: 0)
        return ServiceMetrics.CacheStatistics(
            live: projects.isLive, readHits: counts.hits, readMisses: counts.misses,
            announcements: synchronizer.payloadsSent, readRefreshes: reads?.refreshCounts ?? .init())
    }

    /// Sends pending announcements and stops both threads (before the pool closes).
    func stop() {
        listener.shutdown()
        _ = listenerDone.wait(timeout: .now() + 2)
        synchronizer.shutdown()
    }
}
