import Foundation
import JSON
import Postgres
import XCTest

/// Bouncer on a real Citus cluster (coordinator + two workers, `CitusCluster`): deploy/citus.sql distributes the
/// migrated schema, twice without harm, and a tenant's rows of every table live on one worker. The rest of the
/// end-to-end behaviour on Citus is the existing suites' run by deploy/citus-suite. Skipped (with the reason) where
/// Citus is not installed, unless BOUNCER_CITUS=required.
final class CitusE2ETests: XCTestCase {
    func testCitusSQLPlacesEveryTableAndASecondRunChangesNothing() throws {
        let citus = try CitusCluster.sharedOrSkip()
        let name = try citus.bouncerDatabase(label: "placement")
        let connection = try Connection(settings: citus.coordinator.settings.database(name))
        func placement() throws -> [String] {
            try connection.query("""
                SELECT c.relname || ' ' || coalesce(t.citus_table_type, 'local')
                    || CASE WHEN t.citus_table_type = 'distributed' THEN ' ' || t.distribution_column ELSE '' END AS line
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                LEFT JOIN citus_tables t ON t.table_name = c.oid
                WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname !~ '_[0-9]+$'
                ORDER BY c.relname
                """).map { try $0.decode("line", as: String.self) }
        }
        func definitions() throws -> [String] {
            try connection.query("""
                SELECT p.oid::regprocedure::text || md5(pg_get_functiondef(p.oid)) AS f FROM pg_proc p
                WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'bouncer%' ORDER BY 1
                """).map { try $0.decode("f", as: String.self) }
                + connection.query("""
                    SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) AS c
                    FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND contype IN ('f', 'p', 'u')
                      AND conrelid::regclass::text !~ '_[0-9]+$' ORDER BY 1
                    """).map { try $0.decode("c", as: String.self) }
        }
        let placed = try placement()
        let local = placed.filter { $0.hasSuffix(" local") }
        XCTAssertEqual(local, ["schema_functions local", "schema_migrations local"])
        for line in placed where !line.hasSuffix(" local") && !line.hasSuffix(" reference") {
            XCTAssertTrue(line.hasSuffix(" distributed project_id"), line)
        }
        XCTAssertEqual(placed.filter { $0.hasSuffix(" reference") }.count, 13, "\(placed)")
        let groups = try connection.query("""
            SELECT count(DISTINCT colocation_id)::int8 AS n FROM citus_tables WHERE citus_table_type = 'distributed'
            """)
        XCTAssertEqual(try groups.first?.decode("n", as: Int64.self), 1, "every tenant table in one co-location group")
        // Nothing dropped: the record functions (which use the tables' row types) and every key survive a second run.
        let before = try definitions()
        XCTAssertTrue(before.contains { $0.hasPrefix("bouncer_record_transaction(") })
        XCTAssertTrue(before.contains { $0.hasPrefix("bouncer_record_renewal(") })

        let second = try citus.distribute(database: name)
        XCTAssertTrue(second.contains("every table is already placed"), second)
        XCTAssertEqual(try placement(), placed)
        XCTAssertEqual(try definitions(), before)
    }

    func testOneTenantsRowsLiveOnOneWorker() throws {
        let citus = try CitusCluster.sharedOrSkip()
        let name = try citus.bouncerDatabase(label: "colocation")
        let server = try BouncerProcess(databaseURL: citus.url(database: name))
        defer { server.stopAndAssertCleanExit() }
        let api = API(client: server.client)
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        let r = try api.postReceipt(tenant.publicKey, try payload.mint(), user: "alice")
        XCTAssertEqual(r.status, 201, r.description + server.stderr)
        let user = try api.user(tenant.publicKey, "alice")
        XCTAssertEqual(user.status, 200, user.description)
        XCTAssertEqual(try user.json()["entitlements"], ["pro"], user.description)

        // The shard of each table that holds this project's rows: all on one node.
        let coordinator = try Connection(settings: citus.coordinator.settings.database(name))
        let shards = try coordinator.query("""
            SELECT t.table_name::text AS tbl, s.shard_name::text AS shard, s.nodeport::int8 AS port
            FROM citus_tables t
            JOIN citus_shards s ON s.table_name = t.table_name
                AND s.shardid = get_shard_id_for_distribution_column(t.table_name, \(tenant.id)::uuid)
            WHERE t.citus_table_type = 'distributed'
            ORDER BY 1
            """)
        XCTAssertEqual(shards.count, 44, "one shard per distributed table")
        let ports = Set(try shards.map { try $0.decode("port", as: Int64.self) })
        XCTAssertEqual(ports.count, 1, "a tenant's shards are on one worker: \(ports)")
        let workerPorts = Set(citus.workers.map { Int64($0.port) })
        XCTAssertTrue(ports.isSubset(of: workerPorts), "on a worker, not the coordinator")

        // The rows themselves are there, in that worker's shards.
        guard let port = ports.first, let worker = citus.workers.first(where: { Int64($0.port) == port }) else {
            return XCTFail("no worker for port \(ports)")
        }
        let onWorker = try Connection(settings: worker.settings.database(name))
        for table in ["purchases", "transactions", "subscriptions"] {
            guard let shard = try shards.first(where: { try $0.decode("tbl", as: String.self) == table })?
                .decode("shard", as: String.self) else { return XCTFail("no shard for \(table)") }
            let n = try onWorker.query(
                "SELECT count(*)::int8 AS n FROM \(unsafeSQL: shard) WHERE project_id = \(tenant.id)::uuid")
            XCTAssertEqual(try n.first?.decode("n", as: Int64.self), 1,
                           "\(table) rows of the tenant in \(shard) on port \(port)")
        }
    }
}
