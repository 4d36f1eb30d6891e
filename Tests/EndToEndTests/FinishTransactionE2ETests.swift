import Foundation
import JSON
import Postgres
import XCTest

/// Finish Transaction (issue 25, server-managed delivery) over real `bouncer serve` processes, real PostgreSQL and the
/// fake Apple over real TLS: with `finish_transactions` on, a recorded consumable is finished at Apple exactly once
/// (across a restart too), by the worker after the receipt's transaction; a subscription never; with it off, nothing.
final class FinishTransactionE2ETests: XCTestCase {
    func consumable(_ tenant: Tenant) -> TransactionPayload {
        var t = TransactionPayload(bundleId: tenant.bundleId)
        t.type = "Consumable"
        t.productId = "com.e2e.coins"
        t.expiresDate = nil
        return t
    }

    func row(_ db: E2EDatabase, _ tenant: Tenant, _ transactionId: String) throws -> Row? {
        try db.query("""
            SELECT status, attempts::int8 AS attempts, finished_at IS NOT NULL AS finished, last_error,
                apple_error_code::int8 AS apple_error_code
            FROM transaction_finishes
            WHERE project_id = \(tenant.id)::uuid AND transaction_id = \(transactionId)
            """).first
    }

    func pendingLog(_ db: E2EDatabase, _ tenant: Tenant) throws -> Int {
        try db.count("purchase_changes", project: tenant.id)
    }

    func testConsumablesAreFinishedOnceAndSubscriptionsNever() throws {
        let connected = try AppleConnectedBouncer(label: "finish_transactions")
        let server = try connected.server
        let api = API(client: server.client)
        let db = try connected.db
        let (tenant, _) = try connected.createProject(
            api: api, settings: [("finish_transactions", true)],
            products: [("com.e2e.coins", ["coins"]), ("com.e2e.pro.monthly", ["pro"])])
        XCTAssertEqual(try api.client.get("/v1/admin/projects/\(tenant.id)", headers: E2E.admin).json()["finish_transactions"],
                       true)

        // A consumable: recorded (201), then finished at Apple by the worker.
        let coins = consumable(tenant)
        connected.apple.allowFinish(coins.transactionId, environment: .sandbox)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try coins.mint(), user: "erin").status, 201)
        XCTAssertTrue(E2E.eventually { connected.apple.finishedTransactions(environment: .sandbox) == [coins.transactionId] })
        XCTAssertTrue(try E2E.eventually { try row(db, tenant, coins.transactionId)?.decode("status", as: String.self) == "finished" })
        let finished = try XCTUnwrap(row(db, tenant, coins.transactionId))
        XCTAssertEqual(try finished.decode("attempts", as: Int64.self), 1)
        XCTAssertEqual(try finished.decode("finished", as: Bool.self), true)
        let asked = connected.apple.requests.filter { $0.endpoint == .finishTransaction }
        XCTAssertEqual(asked.map(\.path), ["/inApps/v1/transactions/\(coins.transactionId)/finish"])
        XCTAssertEqual(asked.map(\.method), ["POST"])
        XCTAssertEqual(connected.apple.requests.compactMap(\.jwtProblem), [])
        // The customer export shows when.
        let export = try api.client.get("/v1/admin/projects/\(tenant.id)/users/erin/export", headers: E2E.admin)
        XCTAssertEqual(export.status, 200, export.description)
        let exported = try XCTUnwrap(try export.json()["transactions"]?.arrayValue?.first)
        XCTAssertNotNil(exported["finished_at"]?.stringValue)

        // A subscription is never finished: recorded and derived, no queue row, no call.
        let monthly = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try monthly.mint(), user: "erin").status, 201)
        XCTAssertTrue(try E2E.eventually { try pendingLog(db, tenant) == 0 })
        XCTAssertNil(try row(db, tenant, monthly.transactionId))

        // Across a restart: the finished one is not sent again; a new one is sent once.
        server.stopAndAssertCleanExit()
        let restarted = try connected.startServer(on: db)
        defer { restarted.stopAndAssertCleanExit() }
        let again = API(client: restarted.client)
        let more = consumable(tenant)
        connected.apple.allowFinish(more.transactionId, environment: .sandbox)
        XCTAssertEqual(try again.postReceipt(tenant.publicKey, try more.mint(), user: "erin").status, 201)
        XCTAssertTrue(E2E.eventually {
            connected.apple.finishedTransactions(environment: .sandbox) == [coins.transactionId, more.transactionId]
        })
        // A repeated receipt queues nothing new.
        XCTAssertEqual(try again.postReceipt(tenant.publicKey, try coins.mint(), user: "erin").status, 201)

        // Off: recorded, nothing queued or sent.
        let off = try again.client.send("PATCH", "/v1/admin/projects/\(tenant.id)", json: ["finish_transactions": false],
                                        headers: E2E.admin)
        XCTAssertEqual(off.status, 200, off.description)
        XCTAssertEqual(try off.json()["finish_transactions"], false)
        let unfinished = consumable(tenant)
        connected.apple.allowFinish(unfinished.transactionId, environment: .sandbox)
        XCTAssertEqual(try again.postReceipt(tenant.publicKey, try unfinished.mint(), user: "erin").status, 201)
        XCTAssertTrue(try E2E.eventually { try pendingLog(db, tenant) == 0 })
        Thread.sleep(forTimeInterval: 1.5)   // more than the worker's poll interval
        XCTAssertNil(try row(db, tenant, unfinished.transactionId))
        XCTAssertEqual(connected.apple.finishedTransactions(environment: .sandbox), [coins.transactionId, more.transactionId])
        XCTAssertEqual(connected.apple.requests.filter { $0.endpoint == .finishTransaction }.count, 2)
        XCTAssertEqual(try db.count("transaction_finishes", project: tenant.id), 2)
        // The change is audited.
        XCTAssertEqual(try db.query("""
            SELECT count(*)::int8 AS n FROM audit_log WHERE project_id = \(tenant.id)::uuid AND changes ? 'finish_transactions'
            """).first?.decode("n", as: Int64.self), 2)
    }

    func testApplesOutageIsRetriedWithBackoffAndARefusalIsFinal() throws {
        let connected = try AppleConnectedBouncer(label: "finish_retries", overrides: [
            "BOUNCER_CONSUMPTION_RETRY_BASE_SECONDS": "0.2", "BOUNCER_APPLE_API_TIMEOUT_SECONDS": "2",
        ])
        let server = try connected.server
        defer { server.stopAndAssertCleanExit() }
        let api = API(client: server.client)
        let db = try connected.db
        let (tenant, _) = try connected.createProject(api: api, settings: [("finish_transactions", true)],
                                                      products: [("com.e2e.coins", ["coins"])])
        // Apple down: the worker records the failure and tries again later, not in the receipt's answer.
        connected.apple.inject(.serverError(status: 503), on: .finishTransaction, times: nil)
        let coins = consumable(tenant)
        connected.apple.allowFinish(coins.transactionId, environment: .sandbox)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try coins.mint(), user: "finn").status, 201)
        XCTAssertTrue(try E2E.eventually {
            guard let r = try row(db, tenant, coins.transactionId) else { return false }
            return try r.decode("status", as: String.self) == "pending" && r.decode("last_error", as: String?.self) != nil
        })
        XCTAssertEqual(connected.apple.finishedTransactions(environment: .sandbox), [])
        connected.apple.clearFailures()
        XCTAssertTrue(E2E.eventually { connected.apple.finishedTransactions(environment: .sandbox) == [coins.transactionId] })
        XCTAssertTrue(try E2E.eventually { try row(db, tenant, coins.transactionId)?.decode("status", as: String.self) == "finished" })
        let finished = try XCTUnwrap(row(db, tenant, coins.transactionId))
        XCTAssertGreaterThanOrEqual(try finished.decode("attempts", as: Int64.self), 2)
        XCTAssertNil(try finished.decode("last_error", as: String?.self))

        // A transaction Apple does not know (404 4040010): final, asked once.
        let unknown = consumable(tenant)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try unknown.mint(), user: "finn").status, 201)
        XCTAssertTrue(try E2E.eventually { try row(db, tenant, unknown.transactionId)?.decode("status", as: String.self) == "failed" })
        let failed = try XCTUnwrap(row(db, tenant, unknown.transactionId))
        XCTAssertEqual(try failed.decode("apple_error_code", as: Int64?.self), 4040010)
        XCTAssertEqual(try failed.decode("attempts", as: Int64.self), 1)
        Thread.sleep(forTimeInterval: 1.5)   // more than the worker's poll interval
        XCTAssertEqual(connected.apple.requests.filter { $0.endpoint == .finishTransaction && $0.id == unknown.transactionId }.count, 1)
    }
}
