import Dispatch
import Domain
import Foundation
import Postgres
@testable import Storage
import Synchronization
import XCTest

/// The queue's invariant, computed from `webhook_events` alone, and the queue as stored.
enum WebhookQueueOracle {
    struct Head: Equatable, CustomStringConvertible {
        var seq: Int64
        var user: String?
        var due: Date
        var description: String { "\(seq) \(user ?? "-") \(due.timeIntervalSince1970)" }
    }

    /// Each user's oldest pending event (a user-less one is its own), due at its retry time.
    static func heads(_ pool: ConnectionPool) throws -> [Head] {
        try read(pool, """
            SELECT seq, user_id, due FROM (
                SELECT DISTINCT ON (e.project_id, COALESCE(e.user_id, e.seq::text), e.user_id IS NULL) e.seq, e.user_id,
                    e.next_attempt_at AS due
                FROM webhook_events e WHERE e.status = 'pending'
                ORDER BY e.project_id, COALESCE(e.user_id, e.seq::text), e.user_id IS NULL, e.seq) h
            ORDER BY seq
            """)
    }

    /// The queue; a leased row's due time (its lease's end) shows as its event's when it is no earlier.
    static func queue(_ pool: ConnectionPool) throws -> [Head] {
        try read(pool, """
            SELECT q.seq, q.user_id, CASE WHEN q.lease_owner IS NULL OR q.next_attempt_at < e.next_attempt_at
                                          THEN q.next_attempt_at ELSE e.next_attempt_at END AS due
            FROM webhook_queue q JOIN webhook_events e ON e.project_id = q.project_id AND e.seq = q.seq
            ORDER BY q.seq
            """)
    }

    private static func read(_ pool: ConnectionPool, _ sql: String) throws -> [Head] {
        try pool.withConnection { c in
            try c.query(Query(unsafeSQL: sql)).map {
                Head(seq: try $0.decode("seq", as: Int64.self), user: try $0.decode("user_id", as: String?.self),
                     due: try $0.decode("due", as: Date.self))
            }
        }
    }
}

/// The dispatcher's batch claim and batch record (`completeAndClaim`, `bouncer_webhook_complete`, schema/0031):
/// one event per user and only its head, disjoint claimers, one commit per batch, and no wait on a deriver.
final class WebhookBatchClaimTests: XCTestCase {
    private func hooked(_ label: String, poolSize: Int = 4) throws -> (TestStores, PostgresWebhookStore, UUID) {
        let s = try TestStores.make(label: label, poolSize: poolSize)
        let store = PostgresWebhookStore(pool: s.pool)
        let project = try s.makeProject(1)
        _ = try store.upsertEndpoint(projectId: project.id, url: "https://h.example/x", events: nil,
                                     secret: WebhookOutboxTests.sealed, now: Fixtures.t0)
        return (s, store, project.id)
    }

    /// Two pings for each of users a, b and c; their heads, claimed by "one".
    private func twoPingsEachClaimed(_ store: PostgresWebhookStore, _ project: UUID) throws
        -> [PostgresWebhookStore.ClaimedEvent]
    {
        for user in ["a", "b", "c", "a", "b", "c"] {
            _ = try store.emit(projectId: project, userId: user, type: "ping", dataJSON: "{}")
        }
        let heads = try store.claim(owner: "one", limit: 10, leaseSeconds: 60)
        XCTAssertEqual(heads.map { $0.userId ?? "-" }, ["a", "b", "c"])
        return heads
    }

    private static func delivered(_ events: [PostgresWebhookStore.ClaimedEvent]) -> [PostgresWebhookStore.Completion] {
        events.map { .init(event: $0, at: Date(), durationMs: 1, outcome: .delivered(status: 200)) }
    }

    func testABatchClaimTakesEachUsersHeadOnlyAndNoneBehindAnEarlierPendingEvent() throws {
        let (s, store, project) = try hooked("whbatch")
        defer { s.close() }
        // a: 3 events, b: 2, c: 2 whose first is retried later, d: 1, and two user-less pings.
        for user in ["a", "b", "a", "c", nil, "c", "b", "a", "d", nil] {
            _ = try store.emit(projectId: project, userId: user, type: "ping", dataJSON: "{}")
        }
        let c1 = try XCTUnwrap(try store.claim(owner: "x", limit: 10, leaseSeconds: 60).first { $0.userId == "c" })
        try store.complete(c1, owner: "x", at: Date(), durationMs: 1,
                           outcome: .notDelivered(status: 503, error: "HTTP 503", retryAt: Date() + 3600, failed: false))
        // Leases of the others end now (as after a crash), so everything but c is due again.
        try s.pool.withConnection { c in
            _ = try c.execute("UPDATE webhook_queue SET next_attempt_at = now() - interval '1 second' WHERE user_id IS DISTINCT FROM 'c'")
        }
        let claimed = try store.claim(owner: "one", limit: 100, leaseSeconds: 60)
        XCTAssertEqual(claimed.map { $0.userId ?? "-" }, ["a", "b", "-", "d", "-"])
        XCTAssertEqual(Set(claimed.compactMap(\.userId)).count, claimed.filter { $0.userId != nil }.count)
        let pending = try s.rows("""
            SELECT seq, user_id FROM webhook_events WHERE status = 'pending' AND user_id IS NOT NULL ORDER BY seq
            """).map { (try $0.decode("seq", as: Int64.self), try $0.decode("user_id", as: String.self)) }
        for event in claimed {
            guard let user = event.userId else { continue }
            XCTAssertFalse(pending.contains { $0.1 == user && $0.0 < event.seq }, "\(user) has an earlier pending event")
        }
        XCTAssertEqual(try store.claim(owner: "two", limit: 100, leaseSeconds: 60).count, 0, "all leased or not due")
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), try WebhookQueueOracle.heads(s.pool))
        // The limit is the number of free delivery slots.
        try s.pool.withConnection { c in
            _ = try c.execute("UPDATE webhook_queue SET next_attempt_at = now() - interval '1 second' WHERE user_id IS DISTINCT FROM 'c'")
        }
        XCTAssertEqual(try store.claim(owner: "three", limit: 2, leaseSeconds: 60).map { $0.userId ?? "-" }, ["a", "b"])
    }

    /// Two instances claiming and recording at once: every event is claimed exactly once, a user's in order.
    func testConcurrentClaimersGetDisjointEventsInEachUsersOrder() throws {
        let (s, store, project) = try hooked("whtwo", poolSize: 6)
        defer { s.close() }
        let users = (0..<12).map { "u\($0)" }
        for i in 0..<72 {
            _ = try store.emit(projectId: project, userId: i % 9 == 8 ? nil : users[(i * 7) % users.count],
                               type: "ping", dataJSON: #"{"n":\#(i)}"#)
        }
        let order = Mutex<[(Int64, String?)]>([])
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for owner in ["one", "two"] {
            group.enter()
            Thread {
                defer { group.leave() }
                var finished: [PostgresWebhookStore.Completion] = []
                var idle = 0
                while idle < 20 {
                    do {
                        let (later, claimed) = try store.completeAndClaim(finished, owner: owner, limit: 3,
                                                                          leaseSeconds: 60)
                        order.withLock { o in o.append(contentsOf: claimed.map { ($0.seq, $0.userId) }) }
                        finished = later + Self.delivered(claimed)
                        idle = claimed.isEmpty && later.isEmpty ? idle + 1 : 0
                        if claimed.isEmpty { usleep(2_000) }
                    } catch {
                        failures.withLock { $0.append("\(owner): \(error)") }
                        return
                    }
                }
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(failures.withLock { $0 }, [])
        let claims = order.withLock { $0 }
        XCTAssertEqual(claims.count, 72, "each event once")
        XCTAssertEqual(Set(claims.map(\.0)).count, 72)
        for user in users {
            let seqs = claims.filter { $0.1 == user }.map(\.0)
            XCTAssertEqual(seqs, seqs.sorted(), "\(user)'s events in order")
        }
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_events WHERE status <> 'delivered'"), 0)
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_attempts"), 72)
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), [])
    }

    /// A batch's outcomes and the next claim are one transaction; a batch that never commits (the process killed
    /// before COMMIT) records nothing, and its events go out again after their leases with the same ids.
    func testABatchOfOutcomesCommitsTogetherAndAnUncommittedOneIsDeliveredAgain() throws {
        let (s, store, project) = try hooked("whcommit")
        defer { s.close() }
        let first = try twoPingsEachClaimed(store, project)
        let (later, next) = try store.completeAndClaim(Self.delivered(first), owner: "one", limit: 10, leaseSeconds: 60)
        XCTAssertTrue(later.isEmpty)
        XCTAssertEqual(next.map { $0.userId ?? "-" }, ["a", "b", "c"], "each user's next event, claimed in the same transaction")
        let writers = try s.rows("""
            SELECT DISTINCT x FROM (
                SELECT xmin::text AS x FROM webhook_attempts
                UNION ALL SELECT xmin::text FROM webhook_events WHERE status = 'delivered'
                UNION ALL SELECT xmin::text FROM webhook_queue WHERE lease_owner IS NOT NULL) t
            """).count
        XCTAssertEqual(writers, 1, "three attempts, three events delivered and three leased: one transaction")

        // Killed before COMMIT: the backend goes away in the middle of the batch's transaction.
        let killed = ConnectionPool(settings: s.pool.settings, configuration: .init(size: 1))
        defer { killed.shutdown() }
        XCTAssertThrowsError(try killed.withConnection { c in
            _ = try c.execute("BEGIN")
            let pid = try XCTUnwrap(try c.query("SELECT pg_backend_pid() AS p").first).decode("p", as: Int.self)
            _ = try c.query("""
                SELECT * FROM bouncer_webhook_complete('one', \(next.map { $0.projectId.uuidString.lowercased() })::uuid[],
                    \(next.map(\.seq))::bigint[], '{1,1,1}', '{0,0,0}', '{200,200,200}', '{NULL,NULL,NULL}', '{1,1,1}',
                    '{delivered,delivered,delivered}', '{0,0,0}')
                """)
            _ = try s.rows("SELECT pg_terminate_backend(\(pid))")
            _ = try c.execute("COMMIT")
        })
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_attempts"), 3, "nothing of the batch recorded")
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_events WHERE status = 'pending'"), 3)
        XCTAssertEqual(try store.claim(owner: "two", limit: 10, leaseSeconds: 60).count, 0, "still leased")
        // The leases end (the instance is gone): the same events, with the same ids, go out again.
        try s.pool.withConnection { c in
            _ = try c.execute("UPDATE webhook_queue SET next_attempt_at = now() - interval '1 second'")
        }
        let again = try store.claim(owner: "two", limit: 10, leaseSeconds: 60)
        XCTAssertEqual(again.map(\.eventId), next.map(\.eventId))
        XCTAssertEqual(again.map(\.attempt), [2, 2, 2])
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), try WebhookQueueOracle.heads(s.pool))
    }

    /// `wp5`: the complete checks each lease in the statement that moves its queue row (no FOR UPDATE of the queue
    /// rows first). An owner whose lease ended and was claimed again by another records its attempts, but neither
    /// the queue nor the events move (a delivery or a retry alike); the new owner's outcomes then do; no queue row
    /// was locked apart from the rows moved (one tuple-lock record fewer per event in the WAL).
    func testAnOutcomeWhoseLeaseAnotherOwnerHoldsNowMovesNothing() throws {
        let (s, store, project) = try hooked("whlease")
        defer { s.close() }
        let first = try twoPingsEachClaimed(store, project)
        try s.pool.withConnection { c in
            _ = try c.execute("UPDATE webhook_queue SET next_attempt_at = now() - interval '1 second'")
        }
        let again = try store.claim(owner: "two", limit: 10, leaseSeconds: 60)
        XCTAssertEqual(again.map(\.eventId), first.map(\.eventId))
        let retry = PostgresWebhookStore.Completion(
            event: first[2], at: Date(), durationMs: 1,
            outcome: .notDelivered(status: 500, error: "HTTP 500", retryAt: Date() + 60, failed: false))
        let stale = Self.delivered(Array(first.prefix(2))) + [retry]
        let (later, _) = try store.completeAndClaim(stale, owner: "one", limit: 0, leaseSeconds: 60)
        XCTAssertTrue(later.isEmpty)
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_attempts WHERE instance = 'one'"), 3)
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_events WHERE status = 'pending' AND attempts = 0"), 6,
                       "no event moved by the stale owner")
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_queue WHERE lease_owner = 'two'"), 3,
                       "the new owner's leases stand")
        let (later2, _) = try store.completeAndClaim(Self.delivered(again), owner: "two", limit: 0, leaseSeconds: 60)
        XCTAssertTrue(later2.isEmpty)
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_events WHERE status = 'delivered'"), 3)
        XCTAssertEqual(try s.rows("SELECT user_id FROM webhook_queue ORDER BY user_id").map {
            try $0.decode("user_id", as: String.self)
        }, ["a", "b", "c"],
                       "each user's next event entered")
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), try WebhookQueueOracle.heads(s.pool))
    }

    /// 0043: the queue's row trigger does not run for the outcomes the complete moves itself (delivered, failed); a
    /// retry still runs it (its queue row becomes due at the retry time), and the queue is exactly the heads.
    func testTheQueueTriggerRunsOnlyForTheCompletesRetries() throws {
        let (s, store, project) = try hooked("whwhen")
        defer { s.close() }
        let heads = try twoPingsEachClaimed(store, project)
        let projects = heads.map { $0.projectId.uuidString.lowercased() }
        let retryAt = Int64((Date().timeIntervalSince1970 + 60) * 1e6)
        let calls = try s.pool.withConnection { c in
            _ = try c.execute("BEGIN")
            _ = try c.execute("SET LOCAL track_functions = 'pl'")
            _ = try c.query(Query(unsafeSQL: """
                SELECT * FROM bouncer_webhook_complete('one', '{\(projects.joined(separator: ","))}'::uuid[],
                    '{\(heads.map { String($0.seq) }.joined(separator: ","))}'::bigint[], '{1,1,1}', '{1,1,1}',
                    '{200,NULL,503}', '{NULL,refused,"HTTP 503"}', '{1,1,1}', '{delivered,failed,pending}',
                    '{0,0,\(retryAt)}')
                """))
            let n = try XCTUnwrap(try c.query("""
                SELECT pg_stat_get_xact_function_calls('bouncer_webhook_queue_sync'::regproc) AS n
                """).first).decode("n", as: Int64?.self)
            _ = try c.execute("COMMIT")
            return n
        }
        XCTAssertEqual(calls, 1, "the retry's update only")
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_events WHERE status = 'delivered'"), 1)
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_events WHERE status = 'failed'"), 1)
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), try WebhookQueueOracle.heads(s.pool))
        let next = try store.claim(owner: "two", limit: 10, leaseSeconds: 60)
        XCTAssertEqual(next.map { $0.userId ?? "-" }, ["a", "b"], "a's and b's next events; c's retry is not due")
    }

    /// A pipelined batch (the dispatcher claims up to 4 events per delivery thread): 48 users' heads and a user-less
    /// event finished in one call, delivered, failed and retried; each finished head's user moves on to its next event
    /// (the set-based move in bouncer_webhook_complete), a retried head stays, and the queue is exactly the heads.
    func testABatchOfManyUsersOutcomesMovesEachFinishedHeadsUserOnInOneCall() throws {
        let (s, store, project) = try hooked("whpipeline")
        defer { s.close() }
        let users = (0..<48).map { "u\($0)" }
        for round in 0..<3 {
            for user in users {
                _ = try store.emit(projectId: project, userId: user, type: "ping", dataJSON: "{\"n\":\(round)}")
            }
        }
        _ = try store.emit(projectId: project, userId: nil, type: "ping", dataJSON: "{}")
        let heads = try store.claim(owner: "one", limit: 100, leaseSeconds: 60)
        XCTAssertEqual(heads.count, 49, "each user's head and the user-less event")
        XCTAssertEqual(Set(heads.map(\.dataJSON)), [#"{"n": 0}"#, "{}"])
        let outcomes: [PostgresWebhookStore.Completion] = heads.enumerated().map { i, e in
            switch i % 3 {
            case 0: return .init(event: e, at: Date(), durationMs: 1, outcome: .delivered(status: 200))
            case 1: return .init(event: e, at: Date(), durationMs: 1, outcome: .notDelivered(
                status: nil, error: "refused", retryAt: Date(), failed: true))
            default: return .init(event: e, at: Date(), durationMs: 1, outcome: .notDelivered(
                status: 503, error: "HTTP 503", retryAt: Date() - 1, failed: false))
            }
        }
        let (later, next) = try store.completeAndClaim(outcomes, owner: "one", limit: 100, leaseSeconds: 60)
        XCTAssertTrue(later.isEmpty)
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_attempts"), 49)
        XCTAssertEqual(try s.count("SELECT count(DISTINCT xmin::text) FROM webhook_attempts"), 1, "one transaction")
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), try WebhookQueueOracle.heads(s.pool))
        // Claimed in the same transaction: the finished heads' users' second events, the retried heads again.
        let retried = Set(heads.enumerated().filter { $0.offset % 3 == 2 }.map(\.element.seq))
        XCTAssertEqual(next.count, 48, "every user once; the user-less event was finished or is retried")
        for e in next {
            let user = try XCTUnwrap(e.userId)
            let head = try XCTUnwrap(heads.first { $0.userId == user })
            if retried.contains(head.seq) {
                XCTAssertEqual(e.seq, head.seq, user)
                XCTAssertEqual(e.attempt, 2, user)
            } else {
                XCTAssertEqual(e.dataJSON, #"{"n": 1}"#, user)
            }
        }
    }

    /// The deliveries list by status (0041: pending from the queue's heads, failed from its partial index, delivered
    /// from the primary key) is exactly the newest events of that status, whatever the mix and the limit.
    func testTheDeliveriesListByStatusIsTheNewestEventsOfThatStatus() throws {
        let (s, store, project) = try hooked("whlist")
        defer { s.close() }
        for round in 0..<4 {
            for user in ["a", "b", "c", nil] as [String?] {
                _ = try store.emit(projectId: project, userId: user, type: "ping", dataJSON: "{\"n\":\(round)}")
            }
        }
        // Two rounds: a's heads delivered, b's failed (its next becomes the head), c's retried; user-less ones mixed.
        for _ in 0..<2 {
            let heads = try store.claim(owner: "one", limit: 100, leaseSeconds: 60)
            let outcomes: [PostgresWebhookStore.Completion] = heads.map { e in
                switch e.userId {
                case "a", nil: return .init(event: e, at: Date(), durationMs: 1, outcome: .delivered(status: 200))
                case "b": return .init(event: e, at: Date(), durationMs: 1, outcome: .notDelivered(
                    status: nil, error: "refused", retryAt: Date(), failed: true))
                default: return .init(event: e, at: Date(), durationMs: 1, outcome: .notDelivered(
                    status: 503, error: "HTTP 503", retryAt: Date() + 60, failed: false))
                }
            }
            XCTAssertTrue(try store.completeAndClaim(outcomes, owner: "one", limit: 0, leaseSeconds: 60).later.isEmpty)
        }
        // A manual retry of a's delivered first event: pending again, ahead of a's head.
        let first = try XCTUnwrap(try s.rows("SELECT id FROM webhook_events WHERE user_id = 'a' ORDER BY seq LIMIT 1")
            .first).decode("id", as: String.self)
        XCTAssertNotNil(try store.retry(projectId: project, eventId: first, now: Date()))
        for status in [WebhookDeliveryStatus.pending, .failed, .delivered] {
            let all = try s.rows("""
                SELECT id FROM webhook_events WHERE status = \(status.rawValue) ORDER BY seq DESC
                """).map { try $0.decode("id", as: String.self) }
            XCTAssertGreaterThan(all.count, 1, status.rawValue)
            for limit in [1, all.count - 1, all.count, 100] {
                XCTAssertEqual(try store.deliveries(projectId: project, status: status, limit: limit).map(\.eventId),
                               Array(all.prefix(limit)), "\(status.rawValue), limit \(limit)")
            }
        }
    }

    /// A deriver writing events for a user holds the user's lock until it commits; the batch records the others at
    /// once and leaves that user's outcome for its next round instead of waiting (it may hold a user the deriver
    /// waits for). Once the deriver commits, the outcome is recorded and the deriver's event is the user's next.
    func testAnOutcomeWhoseUserADeriverHoldsIsLeftForTheNextBatchWithoutWaiting() throws {
        let (s, store, project) = try hooked("whbusy")
        defer { s.close() }
        for user in ["a", "b"] { _ = try store.emit(projectId: project, userId: user, type: "ping", dataJSON: "{}") }
        let claimed = try store.claim(owner: "one", limit: 10, leaseSeconds: 60)
        XCTAssertEqual(claimed.map { $0.userId ?? "-" }, ["a", "b"])
        let deriver = ConnectionPool(settings: s.pool.settings, configuration: .init(size: 1))
        defer { deriver.shutdown() }
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        Thread {
            _ = try? deriver.transaction { c in
                _ = try c.query("SELECT bouncer_emit_event(\(project), 'a', 'ping', '{\"n\":2}')")
                holding.signal()
                release.wait()
            }
            finished.signal()
        }.start()
        holding.wait()
        let started = ContinuousClock.now
        let (later, _) = try store.completeAndClaim(Self.delivered(claimed), owner: "one", limit: 0, leaseSeconds: 60)
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(1), "did not wait for the deriver")
        XCTAssertEqual(later.map(\.event.seq), [claimed[0].seq])
        XCTAssertEqual(try s.rows("SELECT user_id, status FROM webhook_events ORDER BY seq").map {
            "\(try $0.decode("user_id", as: String.self)) \(try $0.decode("status", as: String.self))"
        }, ["a pending", "b delivered"])
        release.signal()
        finished.wait()
        let (none, next) = try store.completeAndClaim(later, owner: "one", limit: 10, leaseSeconds: 60)
        XCTAssertTrue(none.isEmpty)
        XCTAssertEqual(next.map(\.dataJSON), [#"{"n": 2}"#], "the deriver's event follows a's first")
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), try WebhookQueueOracle.heads(s.pool))
    }

    /// Random writes of every kind, checking after each that the queue is exactly the heads.
    func testRandomWritesKeepTheQueueEqualToTheHeads() throws {
        let (s, store, project) = try hooked("whrandom")
        defer { s.close() }
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(n))
        }
        var leased: [PostgresWebhookStore.ClaimedEvent] = []
        for step in 0..<250 {
            let op = next(10)
            switch op {
            case 0...3:
                let user: String? = next(8) == 0 ? nil : "u\(next(5))"
                _ = try store.emit(projectId: project, userId: user, type: "ping", dataJSON: "{}")
            case 4:
                leased += try store.claim(owner: "one", limit: 1 + next(4), leaseSeconds: 60)
            case 5, 6:
                guard !leased.isEmpty else { continue }
                let batch = Array(leased.prefix(1 + next(3)))
                leased.removeFirst(batch.count)
                let outcomes: [PostgresWebhookStore.Completion] = batch.map { e in
                    switch next(3) {
                    case 0: return .init(event: e, at: Date(), durationMs: 1, outcome: .delivered(status: 200))
                    case 1: return .init(event: e, at: Date(), durationMs: 1, outcome: .notDelivered(
                        status: 500, error: "HTTP 500", retryAt: Date() - 1, failed: false))
                    default: return .init(event: e, at: Date(), durationMs: 1, outcome: .notDelivered(
                        status: nil, error: "refused", retryAt: Date(), failed: true))
                    }
                }
                leased += try store.completeAndClaim(outcomes, owner: "one", limit: next(3), leaseSeconds: 60).claimed
            case 7:
                // A manual retry of a random event (delivered, failed or pending).
                let ids = try s.rows("SELECT id FROM webhook_events ORDER BY seq").map { try $0.decode("id", as: String.self) }
                guard !ids.isEmpty else { continue }
                _ = try store.retry(projectId: project, eventId: ids[next(ids.count)], now: Date())
            case 8:
                try s.pool.withConnection { c in
                    _ = try c.execute("""
                        UPDATE webhook_events SET status = 'failed' WHERE seq = (
                            SELECT seq FROM webhook_events WHERE status = 'pending' ORDER BY random() LIMIT 1)
                        """)
                }
            default:
                try s.pool.withConnection { c in
                    _ = try c.execute("""
                        DELETE FROM webhook_events WHERE seq IN (
                            SELECT seq FROM webhook_events WHERE status = 'pending' ORDER BY random() LIMIT \(1 + next(2)))
                        """)
                }
            }
            XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), try WebhookQueueOracle.heads(s.pool),
                           "step \(step), op \(op)")
        }
    }

    /// Statements of many rows (the queue follows webhook_events by statement, 0045): several users' events
    /// inserted at once, several heads and later events finished at once, retried at once, and moved to no user
    /// at once; the queue is exactly the heads after each.
    func testStatementsOfManyRowsKeepTheQueueEqualToTheHeads() throws {
        let (s, _, project) = try hooked("whstatements")
        defer { s.close() }
        func run(_ sql: String) throws {
            try s.pool.transaction { c in
                // The writers' way: each user's lock (16979) before its events are written or moved.
                _ = try c.query(Query(unsafeSQL: """
                    SELECT pg_advisory_xact_lock(16979, hashtext('\(project.uuidString.lowercased())/' || u))
                    FROM unnest(ARRAY['a', 'b', 'c']) u ORDER BY u
                    """))
                _ = try c.execute(Query(unsafeSQL: sql))
            }
            XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), try WebhookQueueOracle.heads(s.pool), sql)
        }
        let insert = """
            INSERT INTO webhook_events (project_id, id, type, user_id, data, created_at, next_attempt_at,
                retry_window_start)
            SELECT '\(project.uuidString.lowercased())', 'evt_' || md5(random()::text), 'ping', u, '{}', now(), now(), now()
            FROM unnest(ARRAY['a', 'b', NULL, 'a', 'c', 'b', NULL, 'a']) WITH ORDINALITY AS x(u, n) ORDER BY n
            """
        try run(insert)
        try run(insert)
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool).count, 7, "a, b, c and four user-less events")
        // Heads and a later event of a, delivered in one statement.
        try run("""
            UPDATE webhook_events SET status = 'delivered' WHERE seq IN (
                SELECT seq FROM webhook_queue WHERE user_id IN ('a', 'b')
                UNION ALL (SELECT seq FROM webhook_events WHERE user_id = 'a' ORDER BY seq DESC LIMIT 1))
            """)
        try run("UPDATE webhook_events SET status = 'failed' WHERE user_id = 'a' AND status = 'pending'")
        try run("UPDATE webhook_events SET next_attempt_at = now() + interval '1 minute' WHERE status = 'pending'")
        // Retried by hand, several at once: a's failed events go before nothing, b's delivered one before b's head.
        try run("""
            UPDATE webhook_events SET status = 'pending', next_attempt_at = now()
            WHERE (user_id = 'a' AND status = 'failed')
               OR seq = (SELECT min(seq) FROM webhook_events WHERE user_id = 'b')
            """)
        try run("UPDATE webhook_events SET user_id = NULL WHERE user_id = 'b'")
        try run("UPDATE webhook_events SET status = 'delivered' WHERE status = 'pending'")
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), [])
    }

    /// A claim and the complete of its batch reach their queue rows by key (or ctid), never by a scan of the queue,
    /// so their cost follows the batch, not the queue. With the planner's choice, on a queue of a few thousand heads
    /// as analysed in service, the claim's update (joined to its locked rows by key) and the complete's lease and
    /// delete statements (`q.seq = ANY (…)`) each scanned the whole queue: 3 sequential scans per batch (this test
    /// on main `8a032ec`), each of every version a drain leaves until autovacuum comes (~200 pages late in
    /// `bench/api`'s webhook drain: 730 and 3 × ~250 buffers a batch). Counted: sequential scans of webhook_queue
    /// started in the batch's transaction, 16 events of 3,000 heads.
    /// The 16 events `claim` returns recorded delivered by "one", claim and record in one transaction on `c`; what
    /// `counter` grew by meanwhile (the statistics counters include what this backend has not flushed yet: a
    /// difference inside one transaction).
    private static func deliver16(on c: Connection, counting counter: () throws -> Int64,
                                  claim: () throws -> [PostgresWebhookStore.ClaimedEvent]) throws -> Int64
    {
        _ = try c.execute("BEGIN")
        let before = try counter()
        let claimed = try claim()
        XCTAssertEqual(claimed.count, 16)
        XCTAssertTrue(try PostgresWebhookStore.record(delivered(claimed), owner: "one", on: c).isEmpty)
        let n = try counter() - before
        _ = try c.execute("COMMIT")
        return n
    }

    func testACompleteAndClaimNeverScanTheQueue() throws {
        let (s, _, project) = try hooked("whqueuescan", poolSize: 1)
        defer { s.close() }
        let scans = try s.pool.withConnection { c -> Int64 in
            _ = try c.execute("""
                INSERT INTO webhook_events (project_id, id, type, user_id, data, created_at, next_attempt_at,
                    retry_window_start)
                SELECT \(project), 'evt_' || md5(g::text), 'ping', 'u' || g, '{}', now(), now() - interval '1 hour',
                    now()
                FROM generate_series(1, 3000) g
                """)
            _ = try c.execute("ANALYZE webhook_queue")
            _ = try c.execute("ANALYZE webhook_events")
            func scans() throws -> Int64 {
                try XCTUnwrap(try c.query("""
                    SELECT pg_stat_get_xact_numscans('webhook_queue'::regclass) AS n
                    """).first).decode("n", as: Int64.self)
            }
            return try Self.deliver16(on: c, counting: scans) {
                try PostgresWebhookStore.claim(owner: "one", limit: 16, leaseSeconds: 60, on: c)
            }
        }
        XCTAssertEqual(scans, 0, "sequential scans of webhook_queue by a claim and a complete of 16")
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_events WHERE status = 'delivered'"), 16)
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_queue"), 3_000 - 16)
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), try WebhookQueueOracle.heads(s.pool))
    }

    /// A project's events after statistics taken before they existed (another project's few events analysed, as a
    /// deployment's autovacuum left them before a burst): a complete of 16 reads its 16 events by key. As a join with
    /// the batch, the events' `project_id = ANY (…)` was estimated at one row and became the outer side: every event
    /// of the project compared with the batch (`wp4`: 3,504 fetched for 16 late in a bench drain); and each finished
    /// head's next event was looked for among the project's later events.
    func testACompleteReadsItsBatchsEventsByKeyWhateverTheStatistics() throws {
        let (s, store, other) = try hooked("whstalestats", poolSize: 1)
        defer { s.close() }
        let project = try s.makeProject(2).id
        _ = try store.upsertEndpoint(projectId: project, url: "https://h.example/y", events: nil,
                                     secret: WebhookOutboxTests.sealed, now: Fixtures.t0)
        let fetched = try s.pool.withConnection { c -> Int64 in
            // Two events a user, one after the other (as a refresh writes a user's events).
            func emit(_ project: UUID, _ n: Int) throws {
                _ = try c.execute("""
                    INSERT INTO webhook_events (project_id, id, type, user_id, data, created_at, next_attempt_at,
                        retry_window_start)
                    SELECT \(project), 'evt_' || md5(\(project)::text || g), 'ping', 'u' || (g + 1) / 2, '{}', now(),
                        now() - interval '1 hour', now()
                    FROM generate_series(1, \(n)) g ORDER BY g
                    """)
            }
            try emit(other, 2_000)
            _ = try c.execute("ANALYZE webhook_queue")
            _ = try c.execute("ANALYZE webhook_events")
            try emit(project, 3_000)
            func fetched() throws -> Int64 {
                try XCTUnwrap(try c.query("""
                    SELECT sum(pg_stat_get_xact_tuples_fetched(i.indexrelid))::int8 AS n FROM pg_index i
                    WHERE i.indrelid = 'webhook_events'::regclass
                    """).first).decode("n", as: Int64.self)
            }
            // The claim before (its own join of the events is not this test's).
            let claimed = try PostgresWebhookStore.claim(owner: "one", limit: 16, leaseSeconds: 60, project: project,
                                                         on: c)
            return try Self.deliver16(on: c, counting: fetched) { claimed }
        }
        // Each event: locked, updated, its user's next pending event found, and that one's queue row's foreign key
        // checked. (main: 9,219; with the lock alone by key, 8,320: the next event found by the primary key, the
        // project's events after the head filtered by user.)
        XCTAssertLessThanOrEqual(fetched, 4 * 16, "webhook_events rows fetched through its indexes by a complete of 16")
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_events WHERE status = 'delivered'"), 16)
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_queue WHERE project_id = \(project)"), 1_500)
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), try WebhookQueueOracle.heads(s.pool))
    }

    /// 0067: no foreign key cascades a deleted event's queue row any more; the delete trigger removes it, for a
    /// project's deletion (the cascade from projects) as for erase's and a test's direct deletes.
    func testDeletedEventsTakeTheirQueueRowsWithThem() throws {
        let (s, store, project) = try hooked("whqueuegone")
        defer { s.close() }
        for user in ["a", "b", "a", nil] {
            _ = try store.emit(projectId: project, userId: user, type: "ping", dataJSON: "{}")
        }
        _ = try store.claim(owner: "one", limit: 1, leaseSeconds: 60)
        try s.pool.withConnection { c in
            _ = try c.execute("DELETE FROM webhook_events WHERE user_id = 'b'")
        }
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), try WebhookQueueOracle.heads(s.pool))
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_queue"), 2, "a's head and the ping")
        try s.pool.withConnection { c in
            _ = try c.execute("DELETE FROM projects WHERE id = \(project)")
        }
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_queue"), 0)
    }

    /// 0068: a delivery updates its event in place (HOT): no column an index names changes (the failed events are
    /// indexed by `failed_at`, which only a failure sets) and the page has room (fillfactor 60). On main `8a032ec`
    /// none of the 16 was (`status` was in the failed index's predicate), 13 now; a failure still sets `failed_at`,
    /// and a manual retry clears it.
    func testADeliveryUpdatesItsEventInPlace() throws {
        let (s, store, project) = try hooked("whhot", poolSize: 1)
        defer { s.close() }
        let (updated, hot) = try s.pool.withConnection { c -> (Int64, Int64) in
            _ = try c.execute("""
                INSERT INTO webhook_events (project_id, id, type, user_id, data, created_at, next_attempt_at,
                    retry_window_start)
                SELECT \(project), 'evt_' || md5(g::text), 'ping', 'u' || g, jsonb_build_object('pad', repeat('x', 300)),
                    now(), now() - interval '1 hour', now()
                FROM generate_series(1, 17) g
                """)
            // The counters include what this backend has not flushed yet: differences inside one transaction.
            func counts() throws -> (Int64, Int64) {
                let row = try XCTUnwrap(try c.query("""
                    SELECT pg_stat_get_xact_tuples_updated('webhook_events'::regclass) AS n,
                        pg_stat_get_xact_tuples_hot_updated('webhook_events'::regclass) AS hot
                    """).first)
                return (try row.decode("n", as: Int64.self), try row.decode("hot", as: Int64.self))
            }
            _ = try c.execute("BEGIN")
            let before = try counts()
            let claimed = try PostgresWebhookStore.claim(owner: "one", limit: 16, leaseSeconds: 60, on: c)
            XCTAssertEqual(claimed.count, 16)
            _ = try PostgresWebhookStore.record(
                claimed.map { .init(event: $0, at: Date(), durationMs: 1, outcome: .delivered(status: 200)) },
                owner: "one", on: c)
            let after = try counts()
            _ = try c.execute("COMMIT")
            return (after.0 - before.0, after.1 - before.1)
        }
        XCTAssertEqual(updated, 16)
        // 13 here: a batch updating every row of a page finds room for ~3/4 of them (the rest are new versions).
        XCTAssertGreaterThanOrEqual(hot, 12, "deliveries updated in place")
        let last = try XCTUnwrap(try store.claim(owner: "one", limit: 1, leaseSeconds: 60).first)
        let at = Date()
        try store.complete(last, owner: "one", at: at, durationMs: 1,
                           outcome: .notDelivered(status: 500, error: "HTTP 500", retryAt: at, failed: true))
        XCTAssertEqual(try store.deliveries(projectId: project, status: .failed, limit: 10).map(\.eventId),
                       [last.eventId])
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_events WHERE failed_at IS NOT NULL"), 1)
        _ = try store.retry(projectId: project, eventId: last.eventId, now: Date())
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_events WHERE failed_at IS NOT NULL"), 0)
        XCTAssertEqual(try store.deliveries(projectId: project, status: .failed, limit: 10).count, 0)
    }
}
