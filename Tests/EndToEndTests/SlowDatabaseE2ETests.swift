import Foundation
import JSON
import Postgres
import XCTest

/// A database that answers but is stuck (a lock held elsewhere): the statement timeout turns the wait into a
/// 503 with Retry-After — never a 500, never a verdict — and service resumes when the lock goes.
final class SlowDatabaseE2ETests: XCTestCase {
    func testLockedTablesAnswer503ThenRecover() throws {
        let (db, server, api) = try ownServer(label: "locked", overrides: ["BOUNCER_DB_STATEMENT_TIMEOUT_SECONDS": "1"])
        defer { server.stopAndAssertCleanExit() }
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        let jws = try payload.mint()

        let locker = try Connection(settings: db.settings)
        try locker.executeScript(unsafeSQL: "BEGIN; LOCK TABLE projects, transactions, purchases, subscriptions IN ACCESS EXCLUSIVE MODE")
        let started = Date()
        let post = try api.postReceipt(tenant.publicKey, jws, user: "stuck")
        let get = try api.user(tenant.publicKey, "stuck")
        let elapsed = Date().timeIntervalSince(started)
        try locker.executeScript(unsafeSQL: "ROLLBACK")

        for r in [post, get] {
            assertError(r, 503, "SERVICE_UNAVAILABLE")
            XCTAssertEqual(r.header("Retry-After"), "1", r.description)
        }
        XCTAssertLessThan(elapsed, 8, "the statement timeout (1 s) bounds the wait")
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 0)

        let retry = try api.postReceipt(tenant.publicKey, jws, user: "stuck")
        XCTAssertEqual(retry.status, 201, retry.description + "\n" + server.stderr)
        XCTAssertEqual(try retry.json(), expectedReceipt(payload, entitlements: ["pro"], status: "active"))
        XCTAssertEqual(try api.user(tenant.publicKey, "stuck").json()["entitlements"], ["pro"])
        XCTAssertFalse(server.stderr.contains("status=500"), server.stderr)
    }
}
