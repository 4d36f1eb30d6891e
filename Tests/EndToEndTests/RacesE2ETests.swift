import Foundation
import JSON
import Synchronization
import XCTest

/// Races across two `bouncer serve` processes on one database: the rules must hold under concurrency, not just in order.
extension ContractE2ETests {
    /// Runs `count` posts concurrently, alternating between `clients`; returns the responses in index order.
    func concurrently(_ count: Int, _ clients: [RawHTTPClient],
                      _ body: @escaping @Sendable (Int, RawHTTPClient) throws -> HTTPResponse) throws -> [HTTPResponse] {
        let results = Mutex<[Int: Result<HTTPResponse, any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: count) { i in
            let r = Result { try body(i, clients[i % clients.count]) }
            results.withLock { $0[i] = r }
        }
        return try results.withLock { $0 }.sorted { $0.key < $1.key }.map { try $0.value.get() }
    }

    func testRacesAcrossTwoProcesses() throws {
        let api = try api
        let db = try db
        let second = try BouncerProcess(databaseURL: db.url)
        defer { second.stopAndAssertCleanExit() }
        let clients = [try server.client, second.client]

        // Block: eight users race for one purchase; exactly one wins, the others get 409, one row.
        let blocked = try api.createProject(extra: [("transfer_policy", "block")])
        try api.mapProduct(blocked)
        let jws = try TransactionPayload(bundleId: blocked.bundleId).mint()
        let claims = try concurrently(8, clients) { i, client in
            try client.post("/v1/receipts/\(blocked.publicKey)", json: E2E.receiptBody(jws, user: "racer-\(i)"))
        }
        XCTAssertEqual(claims.filter { $0.status == 201 }.count, 1, claims.map(\.description).joined(separator: "\n"))
        XCTAssertEqual(claims.filter { $0.status == 409 }.count, 7, claims.map(\.description).joined(separator: "\n"))
        XCTAssertEqual(try db.count("subscriptions", project: blocked.id), 1)
        XCTAssertEqual(try db.count("transactions", project: blocked.id), 1)
        let winner = try XCTUnwrap(claims.firstIndex { $0.status == 201 })
        XCTAssertEqual(try api.user(blocked.publicKey, "racer-\(winner)").json()["entitlements"], ["pro"])

        // Transfer: eight users race; each gets 201 and exactly one holds the purchase at the end.
        let moving = try api.createProject()
        try api.mapProduct(moving)
        let movingJWS = try TransactionPayload(bundleId: moving.bundleId).mint()
        let moves = try concurrently(8, clients) { i, client in
            try client.post("/v1/receipts/\(moving.publicKey)", json: E2E.receiptBody(movingJWS, user: "mover-\(i)"))
        }
        XCTAssertEqual(moves.map(\.status), Array(repeating: 201, count: 8), moves.map(\.description).joined(separator: "\n"))
        let holders = try (0..<8).filter { try api.user(moving.publicKey, "mover-\($0)").json()["status"] == "active" }
        XCTAssertEqual(holders.count, 1, "holders: \(holders)")
        let live = try db.query("SELECT count(*)::int8 AS n FROM subscriptions WHERE project_id = \(moving.id)::uuid AND revoked_at IS NULL")
        XCTAssertEqual(try live.first?.decode("n", as: Int64.self), 1)

        // Renewals of one purchase posted concurrently in random order: the latest period wins.
        let renewing = try api.createProject()
        try api.mapProduct(renewing)
        let original = E2E.uniqueId()
        var renewals: [TransactionPayload] = []
        for k in 0..<8 {
            var p = TransactionPayload(bundleId: renewing.bundleId, originalTransactionId: original)
            if k == 0 { p.transactionId = original }
            p.originalPurchaseDate = E2E.ms(-9 * 86_400)
            p.purchaseDate = E2E.ms(Double(k - 8) * 86_400)
            p.expiresDate = E2E.ms(Double(k - 7) * 86_400 + 3_600)
            p.signedDate = p.purchaseDate
            renewals.append(p)
        }
        let minted = try renewals.map { try $0.mint() }.shuffled()
        let posts = try concurrently(8, clients) { i, client in
            try client.post("/v1/receipts/\(renewing.publicKey)", json: E2E.receiptBody(minted[i], user: "renewer"))
        }
        XCTAssertEqual(posts.map(\.status), Array(repeating: 201, count: 8), posts.map(\.description).joined(separator: "\n"))
        let latest = try XCTUnwrap(renewals.last)
        let user = try api.user(renewing.publicKey, "renewer").json()
        XCTAssertEqual(user["subscriptions"]?.arrayValue?.count, 1)
        XCTAssertEqual(user["subscriptions"]?[0]?["current_period_end"], .string(E2E.iso(latest.expiresDate ?? 0)))
        XCTAssertEqual(user["status"], "active")
        let purchase = try db.query("SELECT latest_transaction_id FROM purchases WHERE project_id = \(renewing.id)::uuid")
        XCTAssertEqual(try purchase.first?.decode("latest_transaction_id", as: String.self), latest.transactionId)
        XCTAssertEqual(try db.count("transactions", project: renewing.id), 8)
    }
}
