import Foundation
import JSON
import Postgres
import XCTest

/// Two `bouncer serve` processes on one database, each serving projects and subscription reads from memory: a
/// change made through one reaches the other's answers within the cache's bound (`LISTEN/NOTIFY`), and a lost
/// listener session is followed by a full reload. Waits poll with a generous deadline; nothing asserts timing.
final class CacheE2ETests: XCTestCase {
    private func eventually(_ condition: () throws -> Bool) rethrows -> Bool { try E2E.eventually(condition) }

    /// Two servers on a fresh database, each already answering from memory (so later answers prove invalidation,
    /// not a cache that was still off).
    private func twoInstances(_ label: String) throws -> (E2EDatabase, [BouncerProcess]) {
        let db = try E2EDatabase(label: label)
        // Neither the maximum age nor the periodic reload may explain a change within the test's deadline: only the
        // announcements can.
        let servers = try (0..<2).map { _ in
            try BouncerProcess(databaseURL: db.url, overrides: [
                "BOUNCER_CACHE_REFRESH_SECONDS": "3600", "BOUNCER_READ_CACHE_MAX_AGE_SECONDS": "3600",
            ])
        }
        for server in servers {
            XCTAssertTrue(eventually { server.stderr.contains("cache: listening; projects and reads served from memory") },
                          server.stderr)
        }
        return (db, servers)
    }

    func testProjectChangesOnOneInstanceReachTheOther() throws {
        let (db, servers) = try twoInstances("cacheprojects")
        defer { servers.forEach { $0.stopAndAssertCleanExit() } }
        let a = API(client: servers[0].client), b = API(client: servers[1].client)
        let tenant = try a.createProject()
        try a.mapProduct(tenant)
        XCTAssertTrue(try eventually { try b.user(tenant.publicKey, "alice").status == 200 }, "a new project reaches B")

        // A product mapping changed on A changes what B says the same purchase grants.
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try a.postReceipt(tenant.publicKey, try payload.mint(), user: "alice").status, 201)
        XCTAssertTrue(try eventually { try b.user(tenant.publicKey, "alice").json()["entitlements"] == ["pro"] })
        try a.mapProduct(tenant, "com.e2e.pro.monthly", ["pro", "gold"])
        XCTAssertTrue(try eventually { try b.user(tenant.publicKey, "alice").json()["entitlements"] == ["gold", "pro"] })

        // A public key rotated on A with grace 0: B refuses the old key and takes the new one.
        let rotated = try a.client.post("/v1/admin/projects/\(tenant.id)/rotate-keys",
                                        json: ["key": "public", "grace_seconds": 0], headers: E2E.admin)
        XCTAssertEqual(rotated.status, 200, rotated.description)
        let newKey = try XCTUnwrap(try rotated.json()["public_key"]?.stringValue)
        XCTAssertTrue(try eventually { try b.user(tenant.publicKey, "alice").status == 401 }, "old key refused on B")
        assertError(try b.user(tenant.publicKey, "alice"), 401, "AUTH_INVALID_PUBLIC_KEY")
        XCTAssertEqual(try b.user(newKey, "alice").json()["entitlements"], ["gold", "pro"])

        // A secret key rotated on A with grace 0: B refuses the old one on reads.
        let secret = try a.client.post("/v1/admin/projects/\(tenant.id)/rotate-keys",
                                       json: ["key": "secret", "grace_seconds": 0], headers: E2E.admin)
        XCTAssertEqual(secret.status, 200, secret.description)
        let newSecret = try XCTUnwrap(try secret.json()["secret_key"]?.stringValue)
        XCTAssertTrue(try eventually {
            try b.user(newKey, "alice", headers: ["Authorization": "Bearer \(tenant.secretKey)"]).status == 401
        })
        XCTAssertEqual(try b.user(newKey, "alice", headers: ["Authorization": "Bearer \(newSecret)"]).status, 200)

        // The project deleted on A: B refuses its key.
        XCTAssertEqual(try a.client.delete("/v1/admin/projects/\(tenant.id)", headers: E2E.admin).status, 204)
        XCTAssertTrue(try eventually { try b.user(newKey, "alice").status == 401 }, "deleted project refused on B")
        assertError(try b.user(newKey, "alice"), 401, "AUTH_INVALID_PUBLIC_KEY")
        XCTAssertEqual(try db.count("projects"), 0)
    }

    func testReceiptsAndNotificationsOnOneInstanceChangeTheOthersReads() throws {
        let (_, servers) = try twoInstances("cachereads")
        defer { servers.forEach { $0.stopAndAssertCleanExit() } }
        let a = API(client: servers[0].client), b = API(client: servers[1].client)
        let tenant = try a.createProject()
        try a.mapProduct(tenant)
        XCTAssertTrue(try eventually { try b.user(tenant.publicKey, "alice").json()["status"] == "none" })
        XCTAssertEqual(try b.user(tenant.publicKey, "alice").json()["status"], "none", "B now holds alice's empty read")

        // A receipt posted to A for alice: B's cached "none" gives way to the purchase.
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try a.postReceipt(tenant.publicKey, try payload.mint(), user: "alice").status, 201)
        XCTAssertTrue(try eventually { try b.user(tenant.publicKey, "alice").json()["status"] == "active" })

        // A refund notification posted to A: B's cached "active" turns revoked (the purchase names alice).
        payload.revocationDate = E2E.ms(-1)
        payload.revocationReason = 0
        payload.signedDate = E2E.ms(0)
        let refund = NotificationPayload("REFUND", bundleId: tenant.bundleId, transaction: payload)
        XCTAssertEqual(try a.notify(tenant.publicKey, try refund.mint()).status, 200)
        XCTAssertTrue(try eventually { try b.user(tenant.publicKey, "alice").json()["status"] == "revoked" })

        // The same purchase restored by bob on A (transfer policy): B's cached alice loses it.
        let other = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try a.postReceipt(tenant.publicKey, try other.mint(), user: "carol").status, 201)
        XCTAssertTrue(try eventually { try b.user(tenant.publicKey, "carol").json()["status"] == "active" })
        XCTAssertEqual(try a.postReceipt(tenant.publicKey, try other.mint(), user: "bob").status, 201)
        XCTAssertTrue(try eventually { try b.user(tenant.publicKey, "carol").json()["status"] == "none" })
        XCTAssertEqual(try b.user(tenant.publicKey, "bob").json()["status"], "active")

        // What /metrics says: both live, B answered from memory at least once, A announced its writes.
        func metric(_ api: API, _ series: String) throws -> Double? {
            let text = String(decoding: try api.client.get("/metrics").body, as: UTF8.self)
            return text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
                .flatMap { Double($0.dropFirst(series.count + 1)) }
        }
        XCTAssertEqual(try metric(a, "bouncer_cache_live"), 1)
        XCTAssertEqual(try metric(b, "bouncer_cache_live"), 1)
        XCTAssertGreaterThan(try XCTUnwrap(try metric(b, #"bouncer_read_cache_total{result="hit"}"#)), 0)
        XCTAssertGreaterThan(try XCTUnwrap(try metric(b, #"bouncer_read_cache_total{result="miss"}"#)), 0)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(try metric(a, "bouncer_cache_announcements_total")), 1)
    }

    func testAListenerReconnectReloadsEverything() throws {
        let db = try E2EDatabase(label: "cachereconnect")
        let server = try BouncerProcess(databaseURL: db.url, overrides: [
            "BOUNCER_CACHE_REFRESH_SECONDS": "3600", "BOUNCER_READ_CACHE_MAX_AGE_SECONDS": "3600",
        ])
        defer { server.stopAndAssertCleanExit() }
        let api = API(client: server.client)
        let doomed = try api.createProject()
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let listener = "bouncer-listener-\(server.process.processIdentifier)"
        func listening() throws -> Bool {
            try db.query("SELECT count(*)::int8 AS n FROM pg_stat_activity WHERE application_name = \(listener)")
                .first?.decode("n", as: Int64.self) == 1
        }
        let live = "cache: listening; projects and reads served from memory"
        XCTAssertTrue(try eventually { try listening() && server.stderr.contains(live) }, server.stderr)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try TransactionPayload(bundleId: tenant.bundleId).mint(),
                                           user: "alice").status, 201)
        XCTAssertTrue(try eventually {
            try api.user(doomed.publicKey, "x").status == 200
                && api.user(tenant.publicKey, "alice").json()["status"] == "active"
        }, "both cached")

        // Changes written behind the caches' back (no announcement): the caches keep their answers...
        _ = try db.query("DELETE FROM projects WHERE id = \(doomed.id)::uuid RETURNING id")
        _ = try db.query("UPDATE subscriptions SET revoked_at = now() WHERE project_id = \(tenant.id)::uuid RETURNING user_id")
        XCTAssertEqual(try api.user(doomed.publicKey, "x").status, 200, "served from memory")
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json()["status"], "active", "served from memory")

        // ...until the listener's session dies: the reconnect reloads projects and drops every cached read.
        let terminated = try db.query("""
            SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = \(listener)
            """)
        XCTAssertEqual(try terminated.map { try $0.decode("done", as: Bool.self) }, [true])
        // Back in memory: the second "served from memory" comes only after the post-reconnect reload.
        XCTAssertTrue(eventually { server.stderr.components(separatedBy: live).count - 1 >= 2 }, server.stderr)
        XCTAssertTrue(server.stderr.contains("invalidation channel lost"), server.stderr)
        XCTAssertTrue(try listening(), "the listener is back")
        assertError(try api.user(doomed.publicKey, "x"), 401, "AUTH_INVALID_PUBLIC_KEY")
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json()["status"], "none")
    }
}
