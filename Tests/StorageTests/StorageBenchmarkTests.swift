import Domain
import Foundation
import Postgres
import Storage
import Synchronization
import XCTest

/// Throughput of the two hot paths. Skipped unless `BOUNCER_BENCH=1`:
/// `BOUNCER_BENCH=1 swift test --disable-swift-testing --filter StorageBenchmarkTests`
final class StorageBenchmarkTests: XCTestCase {
    private func run(threads: Int, seconds: Double, _ body: @escaping @Sendable (_ thread: Int, _ i: Int) throws -> Void)
        -> (operations: Int, errors: Int)
    {
        let counts = Mutex((0, 0))
        let group = DispatchGroup()
        let deadline = Date().addingTimeInterval(seconds)
        for t in 0..<threads {
            group.enter()
            Thread {
                var ok = 0, failed = 0, i = 0
                while Date() < deadline {
                    do { try body(t, i); ok += 1 } catch { failed += 1 }
                    i += 1
                }
                counts.withLock { $0.0 += ok; $0.1 += failed }
                group.leave()
            }.start()
        }
        group.wait()
        return counts.withLock { $0 }
    }

    func testHotPathThroughput() throws {
        guard ProcessInfo.processInfo.environment["BOUNCER_BENCH"] == "1" else {
            throw XCTSkip("set BOUNCER_BENCH=1 to run")
        }
        let s = try TestStores.make(label: "bench", poolSize: 8)
        defer { s.close() }
        let p = try s.makeProject()
        _ = try s.projects.setProduct(projectId: p.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]), now: Fixtures.t0)
        let purchases = s.purchases
        let seconds = 2.0
        var lines: [String] = []
        for threads in [1, 4, 8] {
            // A new purchase for a new user each time: the longest path (one statement, like every write).
            let fresh = run(threads: threads, seconds: seconds) { t, i in
                let id = "n\(threads)-\(t)-\(i)"
                _ = try purchases.recordTransaction(
                    Fixtures.monthly(id, original: id, start: 0), userId: "u-\(id)", deviceId: nil, project: p,
                    now: Fixtures.t0)
            }
            // The same transaction re-posted by its owner (app launches).
            let again = run(threads: threads, seconds: seconds) { t, _ in
                let id = "n\(threads)-\(t)-0"
                _ = try purchases.recordTransaction(
                    Fixtures.monthly(id, original: id, start: 0), userId: "u-\(id)", deviceId: nil, project: p,
                    now: Fixtures.t0)
            }
            // GET: one statement.
            let reads = run(threads: threads, seconds: seconds) { t, _ in
                _ = try purchases.ownedPurchases(userId: "u-n\(threads)-\(t)-0", project: p)
            }
            XCTAssertEqual(fresh.errors + again.errors + reads.errors, 0)
            lines.append(String(
                format: "threads %d: new post %.0f/s, repeat post %.0f/s, owned read %.0f/s", threads,
                Double(fresh.operations) / seconds, Double(again.operations) / seconds,
                Double(reads.operations) / seconds))
        }
        FileHandle.standardError.write(Data(("storage bench:\n" + lines.joined(separator: "\n") + "\n").utf8))
    }
}
