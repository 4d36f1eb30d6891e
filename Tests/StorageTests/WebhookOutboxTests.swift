import Domain
import Foundation
import Postgres
import Storage
import XCTest

/// The outbox's SQL contract, for the features that write events (`bouncer_emit_event`) and for the dispatcher
/// (`claim`, `complete`): nothing without a webhook, per-user order, leases, filters.
final class WebhookOutboxTests: XCTestCase {
    static let sealed = SealedSecret(keyId: "0123456789abcdef", bytes: [1, 2, 3])

    func testEmitWritesOnlyWithAWebhookThatWantsTheType() throws {
        let s = try TestStores.make(label: "whemit")
        defer { s.close() }
        let store = PostgresWebhookStore(pool: s.pool)
        let project = try s.makeProject(1)
        XCTAssertNil(try store.emit(projectId: project.id, userId: "u", type: "entitlement.granted", dataJSON: "{}"))
        _ = try store.upsertEndpoint(projectId: project.id, url: "https://h.example/x", events: ["entitlement.revoked"],
                                     secret: Self.sealed, now: Fixtures.t0)
        XCTAssertNil(try store.emit(projectId: project.id, userId: "u", type: "entitlement.granted", dataJSON: "{}"))
        let id = try XCTUnwrap(try store.emit(projectId: project.id, userId: "u", type: "entitlement.revoked",
                                              dataJSON: #"{"entitlement":"pro","reason":"grant_removed"}"#))
        XCTAssertNotNil(id.range(of: "^evt_[0-9a-f]{32}$", options: .regularExpression))
        XCTAssertNotNil(try store.emit(projectId: project.id, userId: nil, type: "ping", dataJSON: "{}"), "ping always")
        let rows = try s.pool.withConnection { c in
            try c.query("SELECT type, user_id, data::text AS data, status FROM webhook_events ORDER BY seq").map {
                "\(try $0.decode("type", as: String.self)) \(try $0.decode("user_id", as: String?.self) ?? "-") "
                    + "\(try $0.decode("data", as: String.self)) \(try $0.decode("status", as: String.self))"
            }
        }
        XCTAssertEqual(rows, [#"entitlement.revoked u {"reason": "grant_removed", "entitlement": "pro"} pending"#,
                              "ping - {} pending"])
        // A second PUT keeps the secret and reports it was not created.
        let (_, created) = try store.upsertEndpoint(projectId: project.id, url: "https://h.example/y", events: nil,
                                                    secret: SealedSecret(keyId: "fedcba9876543210", bytes: [9]),
                                                    now: Fixtures.at(1))
        XCTAssertFalse(created)
        XCTAssertEqual(try store.endpoint(projectId: project.id)?.secret, Self.sealed)
    }

    /// The deriver's form (`bouncer_emit_events`, one INSERT for the users of a refresh): the wanted types only,
    /// numbered in array order, their ids returned in that order; nothing without a webhook; each user's first is
    /// its head.
    func testEmitEventsWritesAUsersWantedEventsInArrayOrder() throws {
        let s = try TestStores.make(label: "whemits")
        defer { s.close() }
        let store = PostgresWebhookStore(pool: s.pool)
        let project = try s.makeProject(1)
        let emit = { () throws -> [String] in
            try s.pool.withConnection { c in
                try c.query("""
                    SELECT bouncer_emit_events(\(project.id), ARRAY['u', 'u', 'v', 'u'],
                        ARRAY['subscription.started', 'entitlement.revoked', 'entitlement.granted', 'entitlement.granted'],
                        ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}', '{"n": 4}']::jsonb[]) AS id
                    """).map { try $0.decode("id", as: String.self) }
            }
        }
        XCTAssertEqual(try emit(), [], "no webhook: nothing")
        _ = try store.upsertEndpoint(projectId: project.id, url: "https://h.example/x",
                                     events: ["entitlement.granted", "subscription.started"],
                                     secret: Self.sealed, now: Fixtures.t0)
        let ids = try emit()
        let rows = try s.pool.withConnection { c in
            try c.query("SELECT id, type, user_id, data::text AS data FROM webhook_events ORDER BY seq").map {
                (try $0.decode("id", as: String.self),
                 "\(try $0.decode("type", as: String.self)) \(try $0.decode("user_id", as: String.self)) "
                    + (try $0.decode("data", as: String.self)))
            }
        }
        XCTAssertEqual(rows.map(\.1), [#"subscription.started u {"n": 1}"#, #"entitlement.granted v {"n": 3}"#,
                                       #"entitlement.granted u {"n": 4}"#])
        XCTAssertEqual(ids, rows.map(\.0))
        XCTAssertEqual(try store.claim(owner: "one", limit: 10, leaseSeconds: 60).map(\.eventId), Array(ids.prefix(2)),
                       "each user's first is its head")
    }

    func testClaimKeepsPerUserOrderAndLeases() throws {
        let s = try TestStores.make(label: "whclaim")
        defer { s.close() }
        let store = PostgresWebhookStore(pool: s.pool)
        let project = try s.makeProject(1)
        _ = try store.upsertEndpoint(projectId: project.id, url: "https://h.example/x", events: nil,
                                     secret: Self.sealed, now: Fixtures.t0)
        for (user, n) in [("a", 1), ("a", 2), ("b", 1), ("a", 3)] {
            _ = try store.emit(projectId: project.id, userId: user, type: "ping", dataJSON: #"{"n":\#(n)}"#)
        }
        // Only the first event of each user is due; a second claimer gets nothing while the leases hold.
        let first = try store.claim(owner: "one", limit: 10, leaseSeconds: 60)
        XCTAssertEqual(first.map { "\($0.userId ?? "-") \($0.dataJSON)" }, [#"a {"n": 1}"#, #"b {"n": 1}"#])
        XCTAssertEqual(first.map(\.attempt), [1, 1])
        XCTAssertEqual(try store.claim(owner: "two", limit: 10, leaseSeconds: 60).count, 0)

        // a/1 fails and is retried later: a/2 still waits behind it; b/1 is delivered.
        let a1 = first[0], b1 = first[1]
        try store.complete(a1, owner: "one", at: Date(), durationMs: 5,
                           outcome: .notDelivered(status: 500, error: "HTTP 500", retryAt: Date() + 3600, failed: false))
        try store.complete(b1, owner: "one", at: Date(), durationMs: 5, outcome: .delivered(status: 204))
        XCTAssertEqual(try store.claim(owner: "two", limit: 10, leaseSeconds: 60).count, 0)

        // Once a/1 is failed for good, a/2 goes next, then a/3.
        try s.pool.withConnection { c in
            _ = try c.execute("UPDATE webhook_events SET status = 'failed' WHERE seq = \(a1.seq)")
        }
        let next = try store.claim(owner: "two", limit: 10, leaseSeconds: 60)
        XCTAssertEqual(next.map(\.dataJSON), [#"{"n": 2}"#])
        // A stale owner cannot complete another's lease (its attempt row is still kept).
        try store.complete(next[0], owner: "one", at: Date(), durationMs: 1, outcome: .delivered(status: 200))
        XCTAssertEqual(try store.claim(owner: "two", limit: 10, leaseSeconds: 60).count, 0)
        try store.complete(next[0], owner: "two", at: Date(), durationMs: 1, outcome: .delivered(status: 200))
        XCTAssertEqual(try store.claim(owner: "two", limit: 10, leaseSeconds: 60).map(\.dataJSON), [#"{"n": 3}"#])

        let deliveries = try store.deliveries(projectId: project.id, status: .delivered, limit: 10)
        XCTAssertEqual(deliveries.map(\.userId), ["b", "a"], "newest first")
        XCTAssertEqual(deliveries.map { $0.attempts.map(\.statusCode) }, [[204], [200]], "one row per attempt number")
        let failed = try store.deliveries(projectId: project.id, status: .failed, limit: 10)
        XCTAssertEqual(failed.first?.attempts.map(\.error), ["HTTP 500"])
        XCTAssertNil(failed.first?.nextAttemptAt)
    }

    /// The claim reads `webhook_queue`, kept by triggers: after every kind of write to webhook_events (emit, lease,
    /// retry later, delivered, failed by hand, manual retry, delete) it holds exactly each user's head event (the
    /// oldest pending one; a user-less event is its own), due at its retry time or, while leased, its lease's end.
    func testQueueHoldsExactlyTheHeadEvents() throws {
        let s = try TestStores.make(label: "whqueue")
        defer { s.close() }
        let store = PostgresWebhookStore(pool: s.pool)
        let project = try s.makeProject(1)
        _ = try store.upsertEndpoint(projectId: project.id, url: "https://h.example/x", events: nil,
                                     secret: Self.sealed, now: Fixtures.t0)
        func assertQueueIsHeads(_ step: String, count: Int, line: UInt = #line) throws {
            let heads = try WebhookQueueOracle.heads(s.pool)
            XCTAssertEqual(try WebhookQueueOracle.queue(s.pool), heads, step, line: line)
            XCTAssertEqual(heads.count, count, step, line: line)
        }
        for user in ["a", "a", "b", nil] {
            _ = try store.emit(projectId: project.id, userId: user, type: "ping", dataJSON: "{}")
        }
        try assertQueueIsHeads("emitted", count: 3)
        let claimed = try store.claim(owner: "one", limit: 10, leaseSeconds: 60)
        XCTAssertEqual(claimed.map { $0.userId ?? "-" }, ["a", "b", "-"])
        try assertQueueIsHeads("leased", count: 3)
        XCTAssertEqual(try s.count("SELECT count(*) FROM webhook_queue WHERE next_attempt_at <= now()"), 0,
                       "a leased head is not due")
        try store.complete(claimed[0], owner: "one", at: Date(), durationMs: 5,
                           outcome: .notDelivered(status: 500, error: "HTTP 500", retryAt: Date() + 3600, failed: false))
        try assertQueueIsHeads("retried later", count: 3)
        try store.complete(claimed[1], owner: "one", at: Date(), durationMs: 5, outcome: .delivered(status: 204))
        try store.complete(claimed[2], owner: "one", at: Date(), durationMs: 5,
                           outcome: .notDelivered(status: nil, error: "refused", retryAt: Date(), failed: true))
        try assertQueueIsHeads("delivered and failed", count: 1)
        try s.pool.withConnection { c in
            _ = try c.execute("UPDATE webhook_events SET status = 'failed' WHERE seq = \(claimed[0].seq)")
        }
        try assertQueueIsHeads("failed by hand: the next event of the user is its head", count: 1)
        XCTAssertEqual(try WebhookQueueOracle.queue(s.pool).map(\.seq), [claimed[0].seq + 1])
        XCTAssertNotNil(try store.retry(projectId: project.id, eventId: claimed[0].eventId, now: Date()))
        try assertQueueIsHeads("retried by hand: ahead of the later head", count: 1)
        XCTAssertEqual(try store.claim(owner: "two", limit: 10, leaseSeconds: 60).map(\.eventId), [claimed[0].eventId],
                       "the retried event goes before the later one of its user")
        try s.pool.withConnection { c in
            _ = try c.execute("DELETE FROM webhook_events WHERE seq = \(claimed[0].seq)")
        }
        try assertQueueIsHeads("head deleted: the next one enters", count: 1)
        try s.pool.withConnection { c in
            _ = try c.execute("DELETE FROM webhook_events WHERE user_id = 'a' AND status = 'pending'")
        }
        try assertQueueIsHeads("deleted", count: 0)
    }
}
