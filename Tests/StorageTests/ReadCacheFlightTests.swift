import Dispatch
import Domain
import Foundation
import Postgres
import Storage
import Synchronization
import XCTest

/// `CachedPurchaseStore` over PostgreSQL: concurrent misses for one user send one query (a single flight), and a
/// write announced while that query is in the air makes the waiting readers read again instead of taking it.
final class ReadCacheFlightTests: XCTestCase {
    private var s: TestStores!
    private var project: Project!

    override func setUpWithError() throws {
        s = try TestStores.make(label: "readflight", poolSize: 8)
        project = try s.makeProject()
        _ = try s.projects.setProduct(
            projectId: project.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]), now: Fixtures.t0)
    }

    override func tearDown() {
        s?.close()
    }

    func testConcurrentMissesForOneUserSendOneQuery() throws {
        let (store, cache, counted) = cachedStore()
        _ = try store.recordTransaction(Fixtures.monthly("t1", original: "o1", start: 0), userId: "u", deviceId: nil,
                                        project: project, now: Fixtures.t0)
        let readers = 8
        let answers = Mutex<[Int]>([])
        let group = DispatchGroup()
        for _ in 0..<readers {
            DispatchQueue.global().async(group: group) { [project] in
                let held = (try? store.holdings(userId: "u", project: project!))?.purchases.count ?? -1
                answers.withLock { $0.append(held) }
            }
        }
        // The first reader's query is held at the gate until every other reader waits for it.
        counted.waitUntilQueried(1)
        while cache.joinedMisses < readers - 1 { usleep(1_000) }
        counted.open()
        group.wait()

        XCTAssertEqual(counted.queries, 1, "one PostgreSQL query for \(readers) concurrent misses")
        XCTAssertEqual(answers.withLock { $0 }, Array(repeating: 1, count: readers))
        XCTAssertEqual(cache.counts.misses, readers)
        XCTAssertEqual(cache.joinedMisses, readers - 1)
        XCTAssertEqual(try store.holdings(userId: "u", project: project).purchases.count, 1)
        XCTAssertEqual(counted.queries, 1, "then a hit")
        XCTAssertEqual(cache.counts.hits, 1)
    }

    func testAWriteAnnouncedDuringTheQueryMakesTheWaitersReadAgain() throws {
        let (store, cache, counted) = cachedStore()
        _ = try store.recordTransaction(Fixtures.monthly("t1", original: "o1", start: 0), userId: "u", deviceId: nil,
                                        project: project, now: Fixtures.t0)
        let waiters = 3
        let first = Mutex<Int?>(nil)
        let later = Mutex<[Int]>([])
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { [project] in
            let held = (try? store.holdings(userId: "u", project: project!))?.purchases.count ?? -1
            first.withLock { $0 = held }
        }
        counted.waitUntilQueried(1)  // the first reader's query has run: it saw one purchase
        for _ in 0..<waiters {
            DispatchQueue.global().async(group: group) { [project] in
                let held = (try? store.holdings(userId: "u", project: project!))?.purchases.count ?? -1
                later.withLock { $0.append(held) }
            }
        }
        while cache.joinedMisses < waiters { usleep(1_000) }
        // A second purchase for the user commits and is announced while the first answer is still on its way.
        _ = try store.recordTransaction(Fixtures.monthly("t2", original: "o2", start: 0), userId: "u", deviceId: nil,
                                        project: project, now: Fixtures.t0)
        counted.open()
        group.wait()

        XCTAssertEqual(first.withLock { $0 }, 1, "the first reader arrived before the write")
        XCTAssertEqual(later.withLock { $0 }, Array(repeating: 2, count: waiters), "the waiters arrived before it too, "
            + "but the answer cannot be told from one read after the write: each reads again")
        XCTAssertEqual(counted.queries, 1 + waiters)
        XCTAssertEqual(try store.holdings(userId: "u", project: project).purchases.count, 2)
    }

    private func cachedStore() -> (CachedPurchaseStore, PurchaseReadCache, GatedStore) {
        let cache = PurchaseReadCache(capacity: 100, maxAge: .seconds(3600))
        cache.setEnabled(true)
        let counted = GatedStore(inner: s.purchases)
        let store = CachedPurchaseStore(inner: counted, cache: cache, announce: { cache.invalidate($0) })
        return (store, cache, counted)
    }
}
