import Foundation
import JSON
import Postgres
import XCTest

/// 3. The database goes away under a running server: 503 with Retry-After (never 500, never a verdict), `/readyz`
/// says so, and service resumes when it returns, without restarting `bouncer`. Uses a cluster of its own.
final class OutageE2ETests: XCTestCase {
    func testDatabaseOutageAnswers503AndRecovers() throws {
        let directory = NSTemporaryDirectory() + "bouncer-e2e-outage-\(getpid())-\(UInt32.random(in: 0...UInt32.max))/pg"
        var cluster = try LocalCluster.startOrReuse(directory: directory, durable: false)
        defer {
            try? cluster.stop(immediate: true)
            try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent)
        }
        let db = try E2EDatabase(label: "outage", cluster: cluster)
        let server = try BouncerProcess(databaseURL: db.url, overrides: ["BOUNCER_DB_ACQUIRE_TIMEOUT_SECONDS": "1"])
        let api = API(client: server.client)
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let before = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try before.mint(), user: "u").status, 201)
        XCTAssertEqual(try api.client.get("/readyz").status, 200)
        let during = try TransactionPayload(bundleId: tenant.bundleId).mint()

        try cluster.stop()

        for attempt in 0..<3 {
            let post = try api.postReceipt(tenant.publicKey, during, user: "u")
            assertError(post, 503, "SERVICE_UNAVAILABLE")
            XCTAssertEqual(post.header("Retry-After"), "1", "attempt \(attempt)")
            XCTAssertNil(try post.json()["valid"])
            let get = try api.user(tenant.publicKey, "u")
            assertError(get, 503, "SERVICE_UNAVAILABLE")
            XCTAssertEqual(get.header("Retry-After"), "1")
            let admin = try api.client.get("/v1/admin/projects", headers: E2E.admin)
            assertError(admin, 503, "SERVICE_UNAVAILABLE")
        }
        // Readiness notices within ~2 s.
        let notice = Date()
        var ready = try api.client.get("/readyz")
        while ready.status != 503 && Date().timeIntervalSince(notice) < 2.5 {
            usleep(100_000)
            ready = try api.client.get("/readyz")
        }
        XCTAssertEqual(ready.status, 503, ready.description)
        XCTAssertEqual(ready.header("Retry-After"), "1", "the server configuration's retryAfterSeconds")
        // The readiness route throws HTTPError: the same shape as every error, request_id included.
        assertError(ready, 503, "SERVICE_UNAVAILABLE", error: "Not ready.", suggestion: "Retry shortly.")
        XCTAssertEqual(try api.client.get("/healthz").status, 200, "liveness does not depend on the database")

        // Back up: the same process serves again (allow the pool a few seconds to reconnect).
        cluster = try LocalCluster.startOrReuse(directory: directory, durable: false)
        let back = Date()
        var post = try api.postReceipt(tenant.publicKey, during, user: "u")
        while post.status == 503 && Date().timeIntervalSince(back) < 10 {
            usleep(200_000)
            post = try api.postReceipt(tenant.publicKey, during, user: "u")
        }
        XCTAssertEqual(post.status, 201, post.description + "\n" + server.stderr)
        let user = try api.user(tenant.publicKey, "u")
        XCTAssertEqual(user.status, 200)
        XCTAssertEqual(try user.json()["subscriptions"]?.arrayValue?.count, 2)
        var readyAgain = try api.client.get("/readyz")
        while readyAgain.status != 200 && Date().timeIntervalSince(back) < 10 {
            usleep(100_000)
            readyAgain = try api.client.get("/readyz")
        }
        XCTAssertEqual(readyAgain.status, 200)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 2)
        XCTAssertFalse(server.stderr.contains("status=500"), server.stderr)
        server.stopAndAssertCleanExit()
    }
}
