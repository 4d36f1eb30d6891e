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

    /// The claim reads `webhook_queue`, kept by a trigger: after every kind of write to webhook_events (emit, lease,
    /// retry later, delivered, failed by hand, manual retry, delete) it holds exactly the pending events, with their
    /// user and retry time.
    func testQueueHoldsExactlyThePendingEvents() throws {
        let s = try TestStores.make(label: "whqueue")
        defer { s.close() }
        let store = PostgresWebhookStore(pool: s.pool)
        let project = try s.makeProject(1)
        _ = try store.upsertEndpoint(projectId: project.id, url: "https://h.example/x", events: nil,
                                     secret: Self.sealed, now: Fixtures.t0)
        func rows(_ sql: String) throws -> [String] {
            try s.pool.withConnection { c in
                try c.query(Query(unsafeSQL: sql)).map {
                    "\(try $0.decode("seq", as: Int64.self)) \(try $0.decode("user_id", as: String?.self) ?? "-") "
                        + "\(try $0.decode("next_attempt_at", as: Date.self).timeIntervalSince1970)"
                }
            }
        }
        func assertQueueIsPending(_ step: String, count: Int, line: UInt = #line) throws {
            let pending = try rows("""
                SELECT seq, user_id, next_attempt_at FROM webhook_events WHERE status = 'pending' ORDER BY seq
                """)
            XCTAssertEqual(try rows("SELECT seq, user_id, next_attempt_at FROM webhook_queue ORDER BY seq"), pending,
                           step, line: line)
            XCTAssertEqual(pending.count, count, step, line: line)
        }
        for user in ["a", "a", "b", nil] {
            _ = try store.emit(projectId: project.id, userId: user, type: "ping", dataJSON: "{}")
        }
        try assertQueueIsPending("emitted", count: 4)
        let claimed = try store.claim(owner: "one", limit: 10, leaseSeconds: 60)
        XCTAssertEqual(claimed.map { $0.userId ?? "-" }, ["a", "b", "-"])
        try assertQueueIsPending("leased", count: 4)
        try store.complete(claimed[0], owner: "one", at: Date(), durationMs: 5,
                           outcome: .notDelivered(status: 500, error: "HTTP 500", retryAt: Date() + 3600, failed: false))
        try assertQueueIsPending("retried later", count: 4)
        try store.complete(claimed[1], owner: "one", at: Date(), durationMs: 5, outcome: .delivered(status: 204))
        try store.complete(claimed[2], owner: "one", at: Date(), durationMs: 5,
                           outcome: .notDelivered(status: nil, error: "refused", retryAt: Date(), failed: true))
        try assertQueueIsPending("delivered and failed", count: 2)
        try s.pool.withConnection { c in
            _ = try c.execute("UPDATE webhook_events SET status = 'failed' WHERE seq = \(claimed[0].seq)")
        }
        try assertQueueIsPending("failed by hand", count: 1)
        XCTAssertNotNil(try store.retry(projectId: project.id, eventId: claimed[0].eventId, now: Date()))
        try assertQueueIsPending("retried by hand", count: 2)
        XCTAssertEqual(try store.claim(owner: "two", limit: 10, leaseSeconds: 60).map(\.eventId), [claimed[0].eventId],
                       "the retried event goes before the later one of its user")
        try s.pool.withConnection { c in
            _ = try c.execute("DELETE FROM webhook_events WHERE user_id = 'a' AND status = 'pending'")
        }
        try assertQueueIsPending("deleted", count: 0)
    }
}
