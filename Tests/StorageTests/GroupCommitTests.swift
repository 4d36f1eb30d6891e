import Domain
import Foundation
import Postgres
@testable import Storage
import Synchronization
import TestSupport
import XCTest

/// Group commit of receipts: `GroupCommit`'s batching (no database), then `PostgresPurchaseStore.commit` — a batch
/// writes exactly what the same calls made one by one write, a refused item fails alone — and the store under
/// real concurrency.
final class GroupCommitTests: XCTestCase {
    // MARK: - GroupCommit

    func testALoneCallRunsAtOnceAndCallersArrivingMeanwhileShareTheNextBatchesInOrder() throws {
        let release = DispatchSemaphore(value: 0)
        let batches = Mutex<[[Int]]>([])
        let committer = GroupCommit<Int, Int>(maxBatch: 3, maxConcurrentBatches: 1) { items in
            let first = batches.withLock { $0.append(items); return $0.count == 1 }
            if first { release.wait() }  // hold the first batch until the others queued
            return items.map { $0 == 4 ? .failure(DomainError(.conflict, "item 4")) : .success($0 * 10) }
        }
        let outcomes = Mutex<[Int: Result<Int, DomainError>]>([:])
        let done = DispatchGroup()
        func start(_ item: Int) {
            done.enter()
            Thread {
                let outcome = Result { try committer.submit(item) }.mapError { $0 as? DomainError ?? DomainError(.conflict, "?") }
                outcomes.withLock { $0[item] = outcome }
                done.leave()
            }.start()
        }
        start(0)
        while batches.withLock({ $0.count }) == 0 { usleep(1_000) }
        let held = DispatchTime.now().uptimeNanoseconds
        // Five callers arrive one after another while batch [0] runs: they queue in arrival order.
        for item in 1...5 {
            start(item)
            while committer.queued < item { usleep(1_000) }
        }
        let heldFor = DispatchTime.now().uptimeNanoseconds - held
        release.signal()
        done.wait()
        XCTAssertEqual(batches.withLock { $0 }, [[0], [1, 2, 3], [4, 5]])
        let results = outcomes.withLock { $0 }
        for item in [0, 1, 2, 3, 5] { XCTAssertEqual(try results[item]?.get(), item * 10) }
        XCTAssertThrowsError(try results[4]?.get())
        XCTAssertEqual(committer.queued, 0)
        // Six items, the five that queued behind batch [0] counted as waiting, three batches.
        let counts = committer.counts
        XCTAssertEqual([counts.items, counts.waited, counts.batches], [6, 5, 3])
        // The first batch was held while the others queued: the time written counts at least that.
        XCTAssertGreaterThanOrEqual(counts.writingNanoseconds, heldFor)
    }

    // MARK: - One batch in the database

    private func recording(_ t: TransactionFacts, _ user: String?, _ project: Project, device: String? = nil,
                           day: Double, source: TransactionSource = .transaction) -> PostgresPurchaseStore.Recording {
        .init(transaction: t, userId: user, deviceId: device, project: project, now: Fixtures.at(day), source: source)
    }

    /// Every row the record function writes, without the project id (each database has its own project).
    private func dump(_ s: TestStores) throws -> [String] {
        var lines: [String] = []
        for table in ["transactions", "purchases", "subscriptions", "ownership_events"] {
            let rows = try s.rows(Query(unsafeSQL: """
                SELECT (to_jsonb(x) - 'project_id')::text AS row FROM \(table) x ORDER BY (to_jsonb(x) - 'project_id')::text
                """))
            for row in rows { lines.append(table + " " + (try row.decode("row", as: String.self))) }
        }
        return lines
    }

    func testABatchWritesAndAnswersExactlyWhatTheSameCallsOneByOneDo() throws {
        let serial = try TestStores.make(label: "gcserial", poolSize: 1)
        defer { serial.close() }
        let batched = try TestStores.make(label: "gcbatch", poolSize: 1)
        defer { batched.close() }
        func recordings(_ p: Project) -> [PostgresPurchaseStore.Recording] {
            [recording(Fixtures.monthly("a1", original: "a", start: 0), "alice", p, device: "phone", day: 1),
             recording(Fixtures.monthly("b1", original: "b", start: 0), "bob", p, day: 1),
             recording(Fixtures.monthly("a2", original: "a", start: 30), "alice", p, day: 2),
             // The same purchase, another user, after alice's two: a transfer from alice (order matters).
             recording(Fixtures.monthly("a2", original: "a", start: 30), "carol", p, day: 3),
             recording(Fixtures.lifetime("c1"), nil, p, day: 3),
             recording(Fixtures.monthly("a1", original: "a", start: 0), "alice", p, day: 4),
             recording(Fixtures.monthly("d1", original: "d", start: 5, revokedAt: 6), "dave", p, day: 7, source: .lookup)]
        }
        let p1 = try serial.makeProject(policy: .transfer)
        let oneByOne = try recordings(p1).map { try PostgresPurchaseStore.commit([$0], pool: serial.pool)[0].get() }
        let p2 = try batched.makeProject(policy: .transfer)
        let together = try PostgresPurchaseStore.commit(recordings(p2), pool: batched.pool).map { try $0.get() }

        XCTAssertEqual(together, oneByOne)
        XCTAssertEqual(together.map(\.ownership), [.bind, .bind, .alreadyOwned, .transfer(from: ["alice"]), nil,
                                                   .transfer(from: ["carol"]), .bind])
        XCTAssertEqual(try dump(batched), try dump(serial))
        XCTAssertEqual(try batched.count("SELECT count(*) FROM transactions"), 5)
        XCTAssertEqual(try batched.count("SELECT count(*) FROM transactions WHERE source = 'lookup'"), 1)
    }

    func testARefusedItemFailsAloneAndTheOthersCommit() throws {
        let s = try TestStores.make(label: "gcrefused", poolSize: 1)
        defer { s.close() }
        let p = try s.makeProject(policy: .block)
        _ = try s.purchases.recordTransaction(Fixtures.monthly("held1", original: "held", start: 0), userId: "u-first",
                                              deviceId: nil, project: p, now: Fixtures.t0)
        var conflicting = Fixtures.monthly("n1", original: "n", product: "other.product", start: 0, signed: 5)
        conflicting.payloadJSON = "{}"
        let outcomes = PostgresPurchaseStore.commit([
            recording(Fixtures.monthly("n1", original: "n", start: 0), "u2", p, day: 1),
            recording(Fixtures.monthly("held2", original: "held", start: 30), "u2", p, day: 1),   // block: 409
            recording(Fixtures.monthly("m1", original: "m", start: 0), "u3", p, day: 1),
            recording(conflicting, "u2", p, day: 1),                                              // identity: 409
            recording(Fixtures.monthly("n2", original: "n", start: 30), "u2", p, day: 2),
        ], pool: s.pool)

        XCTAssertEqual(try outcomes[0].get().ownership, .bind)
        assertDomainError(.purchaseOwnedByAnotherUser) { try outcomes[1].get() }
        XCTAssertEqual(try outcomes[2].get().ownership, .bind)
        assertDomainError(.transactionConflict) { try outcomes[3].get() }
        XCTAssertEqual(try outcomes[4].get().ownership, .alreadyOwned)
        XCTAssertEqual(try outcomes[4].get().purchase.latestTransactionId, "n2")
        // Exactly the accepted items' rows: nothing of held2 or of the conflicting record.
        let transactions = try s.rows("SELECT transaction_id, product_id FROM transactions ORDER BY transaction_id")
            .map { "\(try $0.decode("transaction_id", as: String.self)) \(try $0.decode("product_id", as: String.self))" }
        XCTAssertEqual(transactions, ["held1 pro.monthly", "m1 pro.monthly", "n1 pro.monthly", "n2 pro.monthly"])
        let holders = try s.rows("""
            SELECT original_transaction_id || ' ' || user_id AS h FROM subscriptions WHERE revoked_at IS NULL ORDER BY 1
            """).map { try $0.decode("h", as: String.self) }
        XCTAssertEqual(holders, ["held u-first", "m u3", "n u2"])
        XCTAssertEqual(try s.count("SELECT count(*) FROM purchases"), 3)
        XCTAssertEqual(try s.count("SELECT count(*) FROM ownership_events"), 0)
    }

    func testAnOutageFailsEveryItemOfTheBatchAsRetryable() throws {
        let s = try TestStores.make(label: "gcoutage", poolSize: 1)
        let p = try s.makeProject()
        s.close()
        let outcomes = PostgresPurchaseStore.commit([
            recording(Fixtures.monthly("x1", original: "x", start: 0), "u1", p, day: 1),
            recording(Fixtures.monthly("y1", original: "y", start: 0), "u2", p, day: 1),
        ], pool: s.pool)
        XCTAssertEqual(outcomes.count, 2)
        for outcome in outcomes { assertDomainError(.serviceUnavailable) { try outcome.get() } }
    }

    // MARK: - The store under concurrency

    func testConcurrentRecordingsThroughABatchingStoreKeepEveryRule() throws {
        let s = try TestStores.make(label: "gcconcurrent", poolSize: 4)
        defer { s.close() }
        // Two batches at once (serve's default on 4 cores): the races also cross batches on two connections.
        let store = PostgresPurchaseStore(pool: s.pool, receiptBatchMax: 8, concurrentBatches: 2)
        let blocked = try s.makeProject(1, policy: .block)
        let moving = try s.makeProject(2, policy: .transfer)
        let raced = Fixtures.monthly("r1", original: "r", start: 0)
        // 0..<8: eight users race for one purchase under block; 8..<24: sixteen users race under transfer;
        // 24..<40: sixteen users, each their own purchase.
        let outcomes = try onThreads(40) { i -> Result<OwnershipDecision?, DomainError> in
            do {
                switch i {
                case 0..<8:
                    return .success(try store.recordTransaction(raced, userId: "b\(i)", deviceId: nil, project: blocked,
                                                                now: Fixtures.t0).ownership)
                case 8..<24:
                    return .success(try store.recordTransaction(raced, userId: "m\(i)", deviceId: nil, project: moving,
                                                                now: Fixtures.t0).ownership)
                default:
                    return .success(try store.recordTransaction(
                        Fixtures.monthly("own\(i)", original: "own\(i)", start: 0), userId: "o\(i)", deviceId: "d\(i)",
                        project: moving, now: Fixtures.t0).ownership)
                }
            } catch let error as DomainError {
                return .failure(error)
            } catch {
                return .failure(DomainError(.conflict, "unexpected", underlying: String(reflecting: error)))
            }
        }.map { try XCTUnwrap($0) }

        let block = outcomes[0..<8]
        XCTAssertEqual(block.filter { (try? $0.get()) == .bind }.count, 1)
        XCTAssertEqual(block.filter { if case .failure(let e) = $0 { e.code == .purchaseOwnedByAnotherUser } else { false } }.count, 7)
        XCTAssertEqual(try outcomes[8...].map { try $0.get() }.count, 32, "every transfer and own purchase succeeds")
        XCTAssertEqual(try s.count("SELECT count(*) FROM subscriptions WHERE project_id = \(blocked.id)"), 1)
        XCTAssertEqual(try s.count("SELECT count(*) FROM subscriptions WHERE project_id = \(moving.id) AND revoked_at IS NULL"), 17)
        XCTAssertEqual(try s.count("SELECT count(*) FROM ownership_events WHERE project_id = \(moving.id)"), 15)
        XCTAssertEqual(try s.count("""
            SELECT count(*) FROM ownership_events e
            WHERE NOT EXISTS (SELECT 1 FROM ownership_events n WHERE n.from_user_id = e.to_user_id)
            """), 1, "the moves form one chain ending at the current owner")
        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions WHERE transaction_id LIKE 'own%'"), 16)
    }
}
