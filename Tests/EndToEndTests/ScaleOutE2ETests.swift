import Foundation
import JSON
import Synchronization
import XCTest

/// Scale-out on one PostgreSQL: two `bouncer serve` processes start together on an empty database (racing through
/// the migrations) and take the same receipts and notifications at once.
final class ScaleOutE2ETests: XCTestCase {
    func testTwoInstancesRaceMigrationsAndShareTheSameTruth() throws {
        let db = try E2EDatabase(label: "scaleout")

        // Both start-ups race through the migrations on an empty database.
        let started = Mutex<[Result<BouncerProcess, any Error>]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            let r = Result { try BouncerProcess(databaseURL: db.url) }
            started.withLock { $0.append(r) }
        }
        let servers = try started.withLock { $0 }.map { try $0.get() }
        defer { servers.forEach { $0.stopAndAssertCleanExit() } }
        let applied = try db.query("SELECT count(*)::int8 AS n FROM schema_migrations")
        let versions = try XCTUnwrap(applied.first?.decode("n", as: Int64.self))
        XCTAssertGreaterThanOrEqual(versions, 3)
        let distinct = try db.query("SELECT count(DISTINCT version)::int8 AS n FROM schema_migrations")
        XCTAssertEqual(try distinct.first?.decode("n", as: Int64.self), versions, "each migration applied once")

        let clients = servers.map(\.client)
        let api = API(client: clients[0])
        let tenant = try api.createProject()
        try api.mapProduct(tenant)

        // 24 purchases by 12 users; every receipt is posted to BOTH instances at the same moment.
        let payloads = (0..<24).map { _ in TransactionPayload(bundleId: tenant.bundleId) }
        let receipts = try payloads.map { try $0.mint() }
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: receipts.count * 2) { i in
            let n = i / 2
            let r = try? clients[i % 2].post(
                "/v1/receipts/\(tenant.publicKey)", json: E2E.receiptBody(receipts[n], user: "user-\(n % 12)"))
            statuses.withLock { $0.append(r?.status ?? -1) }
        }
        XCTAssertEqual(statuses.withLock { $0 }.filter { $0 != 201 }, [], "every post answers 201, never 5xx")
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 24, "one row per transaction id")
        XCTAssertEqual(try db.count("subscriptions", project: tenant.id), 24)

        // Refund notifications for half the purchases, each delivered to both instances at once.
        let refunds = try payloads.prefix(12).map { p -> (String, String) in
            var refunded = p
            refunded.revocationDate = E2E.ms(-1)
            refunded.revocationReason = 0
            refunded.signedDate = E2E.ms(0)
            let n = NotificationPayload("REFUND", bundleId: tenant.bundleId, transaction: refunded)
            return (n.uuid, try n.mint())
        }
        let answers = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: refunds.count * 2) { i in
            let r = try? API(client: clients[i % 2]).notify(tenant.publicKey, refunds[i / 2].1)
            let status = (try? r?.json()["status"]?.stringValue) ?? nil
            answers.withLock { $0.append("\(r?.status ?? -1) \(status ?? "?")") }
        }
        let all = answers.withLock { $0 }
        XCTAssertEqual(all.filter { $0.hasPrefix("200 ") }.count, 24, all.joined(separator: "\n"))
        XCTAssertEqual(all.filter { $0 == "200 processed" }.count, 12, "exactly one instance processes each")
        XCTAssertEqual(all.filter { $0 == "200 duplicate" }.count, 12, "the other sees a redelivery")
        XCTAssertEqual(try db.count("notifications", project: tenant.id), 12)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 24)

        // Both instances give the same answer for every user: users 0–11 own purchases n and n+12; n < 12 refunded.
        for user in 0..<12 {
            let a = try API(client: clients[0]).user(tenant.publicKey, "user-\(user)").json()
            let b = try API(client: clients[1]).user(tenant.publicKey, "user-\(user)").json()
            XCTAssertEqual(a, b, "user-\(user)")
            XCTAssertEqual(a["status"], "active", "purchase \(user + 12) is still active")
            let statuses = a["subscriptions"]?.arrayValue?.compactMap { $0["status"]?.stringValue }.sorted()
            XCTAssertEqual(statuses, ["active", "revoked"], "user-\(user)")
        }
    }
}
