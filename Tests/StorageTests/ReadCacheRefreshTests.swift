import Domain
import Foundation
import Postgres
import Storage
import Synchronization
import XCTest

/// `CachedPurchaseStore` over PostgreSQL, refreshing ahead: a hit past its entry's refresh point is served from
/// memory and queues one background re-read, whose answer restarts the entry's life unless a write was announced
/// meanwhile; the queue is bounded; no entry is served later than `maxAge` after its query. Time is a manual clock,
/// and every entry lives the whole `maxAge` (`spread` 1), so its refresh point is at `maxAge * 3 / 4`.
final class ReadCacheRefreshTests: XCTestCase {
    private var s: TestStores!
    private var project: Project!
    private let clock = ManualClock()
    private let maxAge = Duration.seconds(10)

    override func setUpWithError() throws {
        s = try TestStores.make(label: "readrefresh", poolSize: 8)
        project = try s.makeProject()
        _ = try s.projects.setProduct(
            projectId: project.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]), now: Fixtures.t0)
    }

    override func tearDown() {
        s?.close()
    }

    func testAHitPastTheRefreshPointIsServedAndRefreshedOnceAndItsAgeRestarts() throws {
        let (store, cache, counted) = cachedStore()
        try record("t1", original: "o1", user: "u", through: store)
        XCTAssertEqual(try held("u", store), 1)  // miss at t = 0
        XCTAssertEqual(counted.queries, 1)
        // A second purchase commits without an announcement (as if its writer died before announcing).
        try record("t2", original: "o2", user: "u", through: s.purchases)

        clock.advance(.seconds(7))
        XCTAssertEqual(try held("u", store), 1, "before the refresh point: a plain hit")
        XCTAssertEqual(counted.queries, 1)

        clock.advance(.seconds(1))  // t = 8 s: past the refresh point (7.5 s)
        XCTAssertEqual(try held("u", store), 1, "served from memory while the refresh runs")
        XCTAssertEqual(try held("u", store), 1)
        waitFor(cache) { $0.refreshed == 1 }
        XCTAssertEqual(counted.queries, 2, "one background query for two hits past the refresh point")
        XCTAssertEqual(cache.counts.hits, 3)
        XCTAssertEqual(cache.counts.misses, 1)

        XCTAssertEqual(try held("u", store), 2, "the refreshed entry")
        clock.advance(.seconds(7))  // t = 15 s: past the first entry's expiry, 7 s into the refreshed one's life
        XCTAssertEqual(try held("u", store), 2)
        XCTAssertEqual(counted.queries, 2, "the refreshed entry's age restarted at its query (t = 8 s)")
        XCTAssertEqual(cache.counts.misses, 1)
        XCTAssertEqual(cache.refreshCounts, .init(refreshed: 1))
    }

    func testAWriteAnnouncedDuringARefreshWins() throws {
        let (store, cache, counted) = cachedStore()
        try record("t1", original: "o1", user: "u", through: store)
        XCTAssertEqual(try held("u", store), 1)
        counted.close()
        clock.advance(.seconds(8))
        XCTAssertEqual(try held("u", store), 1)  // queues the refresh, whose query is held after it ran
        counted.waitUntilQueried(2)
        // The write commits and is announced while the refresh's answer (one purchase) is on its way.
        try record("t2", original: "o2", user: "u", through: store)
        counted.open()
        waitFor(cache) { $0.discarded == 1 }

        XCTAssertEqual(try held("u", store), 2, "the announcement dropped the entry; the refresh did not restore it")
        XCTAssertEqual(counted.queries, 3)
        XCTAssertEqual(cache.counts.misses, 2)
        XCTAssertEqual(cache.refreshCounts, .init(discarded: 1))
    }

    func testTheRefreshQueueIsBoundedAndWhatItDropsExpires() throws {
        let (store, cache, counted) = cachedStore(workers: 1, queue: 2)
        let users = (0..<5).map { "u\($0)" }
        for user in users {
            try record("t-\(user)", original: "o-\(user)", user: user, through: store)
            XCTAssertEqual(try held(user, store), 1)
        }
        XCTAssertEqual(counted.queries, 5)
        counted.close()
        clock.advance(.seconds(8))
        XCTAssertEqual(try held("u0", store), 1)
        counted.waitUntilQueried(6)  // the one worker re-reads u0, held: the queue is empty again
        for user in users.dropFirst() { XCTAssertEqual(try held(user, store), 1) }  // u1, u2 queued; u3, u4 not
        XCTAssertEqual(try held("u1", store), 1, "already queued: not queued again, not dropped")
        XCTAssertEqual(cache.refreshCounts, .init(dropped: 2))
        XCTAssertEqual(counted.queries, 6)
        counted.open()
        waitFor(cache) { $0.refreshed == 3 }
        XCTAssertEqual(counted.queries, 8)

        clock.advance(.seconds(2))  // t = 10 s: the entries not refreshed (u3, u4) expire; the others live
        for user in users { XCTAssertEqual(try held(user, store), 1) }
        XCTAssertEqual(counted.queries, 10, "u3 and u4 read again")
        XCTAssertEqual(cache.counts.misses, 7)
        XCTAssertEqual(cache.refreshCounts, .init(refreshed: 3, dropped: 2))
    }

    func testNoEntryIsServedPastMaxAge() throws {
        let (store, cache, counted) = cachedStore()
        try record("t1", original: "o1", user: "u", through: store)
        XCTAssertEqual(try held("u", store), 1)
        clock.advance(maxAge)
        XCTAssertEqual(try held("u", store), 1)
        XCTAssertEqual(counted.queries, 2, "an entry not read since its refresh point expires at maxAge")
        XCTAssertEqual(cache.counts.misses, 2)

        // A refresh still running when the entry reaches maxAge does not keep the entry alive.
        counted.close()
        clock.advance(.seconds(8))
        XCTAssertEqual(try held("u", store), 1)  // queues the refresh (held)
        counted.waitUntilQueried(3)
        clock.advance(.seconds(2))
        let answer = Mutex<Int?>(nil)
        let reader = Thread { [project] in
            answer.withLock { $0 = (try? store.holdings(userId: "u", project: project!))?.purchases.count }
        }
        reader.start()
        counted.waitUntilQueried(4)  // the reader missed and sent its own query
        XCTAssertEqual(cache.counts.misses, 3)
        counted.open()
        waitFor(cache) { $0.refreshed + $0.discarded == 1 }
        while answer.withLock({ $0 }) == nil { usleep(1_000) }
        XCTAssertEqual(answer.withLock { $0 }, 1)
    }

    private func cachedStore(workers: Int = 2, queue: Int = 16) -> (CachedPurchaseStore, PurchaseReadCache, GatedStore) {
        let cache = PurchaseReadCache(capacity: 100, maxAge: maxAge, refreshWorkers: workers,
                                      refreshQueueCapacity: queue, now: { [clock] in clock.now }, spread: { 1 })
        cache.setEnabled(true)
        let counted = GatedStore(inner: s.purchases, open: true)
        let store = CachedPurchaseStore(inner: counted, cache: cache, announce: { cache.invalidate($0) })
        return (store, cache, counted)
    }

    private func record(_ id: String, original: String, user: String, through store: any PurchaseStore) throws {
        _ = try store.recordTransaction(Fixtures.monthly(id, original: original, start: 0), userId: user, deviceId: nil,
                                        project: project, now: Fixtures.t0)
    }

    private func held(_ user: String, _ store: CachedPurchaseStore) throws -> Int {
        try store.holdings(userId: user, project: project).purchases.count
    }

    /// Waits until the background refreshes reach `done` (they run on another thread).
    private func waitFor(_ cache: PurchaseReadCache, _ done: (PurchaseReadCache.RefreshCounts) -> Bool) {
        while !done(cache.refreshCounts) { usleep(1_000) }
    }
}

/// A continuous clock that moves only when told.
final class ManualClock: Sendable {
    private let start = ContinuousClock.now
    private let offset = Mutex<Duration>(.zero)

    var now: ContinuousClock.Instant { start + offset.withLock { $0 } }

    func advance(_ by: Duration) { offset.withLock { $0 += by } }
}
