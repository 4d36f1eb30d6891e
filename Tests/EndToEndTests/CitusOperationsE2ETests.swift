import Foundation
import JSON
import Postgres
import Synchronization
import XCTest

/// What only a cluster does, done under traffic on a real Citus cluster (`CitusCluster`): a third worker joins and
/// the shards rebalance while receipts are posted; one tenant moves to a shard of its own while it is read; two
/// Bouncer instances share the coordinator. Skipped (with the reason) where Citus is not installed.
final class CitusOperationsE2ETests: XCTestCase {
    /// Receipts for `tenant`, minted before the clock starts (minting runs a signer process).
    private func receipts(_ tenant: Tenant, count: Int) throws -> [(id: String, jws: String)] {
        try (0..<count).map { _ in
            let payload = TransactionPayload(bundleId: tenant.bundleId)
            return (payload.transactionId, try payload.mint())
        }
    }

    /// Posts each receipt until it is recorded (201), as a client would, retrying a 503; every status seen, with
    /// when it came.
    private static func postAll(_ receipts: [(id: String, jws: String)], key: String, port: Int, pause: Double)
        -> [(at: Date, status: Int)]
    {
        var statuses: [(at: Date, status: Int)] = []
        for (index, receipt) in receipts.enumerated() {
            for _ in 0..<50 {
                let status = (try? RawHTTPClient(port: port).post(
                    "/v1/receipts/\(key)", json: E2E.receiptBody(receipt.jws, user: "user\(index % 7)")).status) ?? -1
                statuses.append((Date(), status))
                if status == 201 { break }
                usleep(200_000)
            }
            usleep(UInt32(pause * 1_000_000))
        }
        return statuses
    }

    func testAThirdWorkerJoinsAndTheShardsRebalanceWhileReceiptsArePosted() throws {
        let citus = try CitusCluster.sharedOrSkip()
        let name = try citus.bouncerDatabase(label: "rebalance", shardCount: 8)
        let server = try BouncerProcess(databaseURL: citus.url(database: name))
        defer { server.stopAndAssertCleanExit() }
        let api = API(client: server.client)
        let tenants = try (0..<3).map { _ in
            let tenant = try api.createProject()
            try api.mapProduct(tenant)
            return tenant
        }
        let batches = try tenants.map { try receipts($0, count: 15) }
        let third = try citus.startExtraNode()
        let port = server.port
        let rebalanced = Mutex<String?>(nil)
        let window = Mutex<(start: Date, end: Date)?>(nil)

        let results = onThreads(tenants.count + 1) { index -> [(at: Date, status: Int)] in
            if index == tenants.count {
                let start = Date()
                defer { window.withLock { $0 = (start, Date()) } }
                do {
                    try citus.addNode(third, to: name)
                    let connection = try Connection(settings: citus.coordinator.settings.database(name))
                    _ = try connection.query("SET statement_timeout = '180s'")
                    _ = try connection.query("SELECT citus_rebalance_start()")
                    _ = try connection.query("SELECT citus_rebalance_wait()")
                    let state = try connection.query("SELECT state::text AS s FROM citus_rebalance_status()")
                    rebalanced.withLock { $0 = try? state.first?.decode("s", as: String.self) }
                } catch {
                    rebalanced.withLock { $0 = "error: \(error)" }
                }
                return []
            }
            return Self.postAll(batches[index], key: tenants[index].publicKey, port: port, pause: 0.2)
        }
        XCTAssertEqual(rebalanced.withLock { $0 }, "finished")
        let statuses = results.compactMap { $0 }.flatMap { $0 }
        XCTAssertEqual(Set(statuses.map(\.status)).subtracting([201, 503]), [], "every POST answered 201 or a retryable 503")
        XCTAssertEqual(statuses.filter { $0.status == 201 }.count, 45)
        let during = try XCTUnwrap(window.withLock { $0 })
        XCTAssertGreaterThan(statuses.filter { $0.status == 201 && $0.at > during.start && $0.at < during.end }.count, 0,
                             "receipts were recorded while the shards moved")

        // Nothing lost, nothing twice: each tenant holds exactly its receipts; and the new node holds shards.
        let connection = try Connection(settings: citus.coordinator.settings.database(name))
        for (tenant, batch) in zip(tenants, batches) {
            let ids = try connection.query("""
                SELECT transaction_id FROM transactions WHERE project_id = \(tenant.id)::uuid ORDER BY 1
                """).map { try $0.decode("transaction_id", as: String.self) }
            XCTAssertEqual(ids, batch.map(\.id).sorted())
        }
        let onThird = try connection.query("""
            SELECT count(*)::int8 AS n FROM citus_shards WHERE nodeport = \(third.port)::int AND table_name = 'purchases'::regclass
            """)
        XCTAssertGreaterThan(try onThird.first?.decode("n", as: Int64.self) ?? 0, 0, "the third worker got shards")
    }

    func testOneTenantMovesToAShardOfItsOwnWhileItIsRead() throws {
        let citus = try CitusCluster.sharedOrSkip()
        let name = try citus.bouncerDatabase(label: "isolate", shardCount: 4)
        let server = try BouncerProcess(databaseURL: citus.url(database: name))
        defer { server.stopAndAssertCleanExit() }
        let api = API(client: server.client)
        let big = try api.createProject(), small = try api.createProject()
        try api.mapProduct(big)
        try api.mapProduct(small)
        for (index, receipt) in try receipts(big, count: 5).enumerated() {
            XCTAssertEqual(try api.postReceipt(big.publicKey, receipt.jws, user: "reader\(index)").status, 201)
        }
        let port = server.port
        let isolated = Mutex<String?>(nil)
        let reads = onThreads(2) { index -> [Int] in
            if index == 1 {
                do {
                    let connection = try Connection(settings: citus.coordinator.settings.database(name))
                    _ = try connection.query("SET statement_timeout = '180s'")
                    _ = try connection.query(
                        "SELECT isolate_tenant_to_new_shard('purchases', \(big.id)::uuid, cascade_option => 'CASCADE')")
                    isolated.withLock { $0 = "done" }
                } catch {
                    isolated.withLock { $0 = "error: \(error)" }
                }
                return []
            }
            var statuses: [Int] = []
            while isolated.withLock({ $0 == nil }) || statuses.count < 10 {
                let r = try? RawHTTPClient(port: port).get("/v1/subscriptions/\(big.publicKey)/reader\(statuses.count % 5)")
                statuses.append(r.map { $0.status == 200 && ((try? $0.json()["entitlements"]) == ["pro"]) ? 200 : $0.status } ?? -1)
                usleep(50_000)
            }
            return statuses
        }
        XCTAssertEqual(isolated.withLock { $0 }, "done")
        let statuses = reads.compactMap { $0 }.flatMap { $0 }
        XCTAssertEqual(Set(statuses).subtracting([200, 503]), [], "every read answered (200 with the entitlement, or 503)")
        XCTAssertGreaterThanOrEqual(statuses.filter { $0 == 200 }.count, 10)

        // The tenant's shard now holds that tenant only: its hash range is one value.
        let connection = try Connection(settings: citus.coordinator.settings.database(name))
        let range = try connection.query("""
            SELECT (s.shardminvalue = s.shardmaxvalue) AS alone FROM pg_dist_shard s
            WHERE s.shardid = get_shard_id_for_distribution_column('purchases', \(big.id)::uuid)
            """)
        XCTAssertEqual(try range.first?.decode("alone", as: Bool.self), true)
        XCTAssertEqual(try api.user(big.publicKey, "reader0").status, 200)
        let after = try receipts(small, count: 1)
        XCTAssertEqual(try api.postReceipt(small.publicKey, after[0].jws, user: "x").status, 201)
    }

    func testTwoInstancesShareTheCoordinator() throws {
        let citus = try CitusCluster.sharedOrSkip()
        let name = try citus.bouncerDatabase(label: "two")
        let first = try BouncerProcess(databaseURL: citus.url(database: name))
        defer { first.stopAndAssertCleanExit() }
        let second = try BouncerProcess(databaseURL: citus.url(database: name))
        defer { second.stopAndAssertCleanExit() }
        let one = API(client: first.client), two = API(client: second.client)
        let tenant = try one.createProject()
        try two.mapProduct(tenant)
        for (index, receipt) in try receipts(tenant, count: 6).enumerated() {
            let r = try (index % 2 == 0 ? one : two).postReceipt(tenant.publicKey, receipt.jws, user: "u\(index)")
            XCTAssertEqual(r.status, 201, r.description)
            let read = try (index % 2 == 0 ? two : one).user(tenant.publicKey, "u\(index)")
            XCTAssertEqual(try read.json()["entitlements"], ["pro"], read.description)
        }
    }
}
