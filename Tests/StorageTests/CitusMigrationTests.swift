import Postgres
@testable import Storage
import TestSupport
import XCTest

/// Upgrading Bouncer on a distributed database (deploy/citus.md, "Upgrading"): `bouncer migrate` through the
/// coordinator after `deploy/citus.sql` applies a new release's migration (DDL and data on a distributed table) and
/// its changed function files, and the workers follow. On a real Citus cluster (`CitusCluster`); skipped where Citus
/// is not installed, unless BOUNCER_CITUS=required.
final class CitusMigrationTests: XCTestCase {
    /// A next release's migration as they are written: a column and an index on a distributed table, then data. (0089
    /// is this work's reserved number; no migration of schema/ takes it.)
    static let probe = Migration(version: 89, name: "citus_upgrade_probe", sql: """
        ALTER TABLE purchases ADD COLUMN upgrade_probe int;
        CREATE INDEX purchases_upgrade_probe_idx ON purchases (project_id, upgrade_probe);
        UPDATE purchases SET upgrade_probe = 0 WHERE upgrade_probe IS NULL;
        """)

    /// The embedded function files with `name`'s body changed (a comment inside it: a new checksum).
    static func functions(changing name: String, mark: String) -> [SchemaFunction] {
        SchemaFunction.embedded.map { f in
            f.name == name ? SchemaFunction(name: f.name, sql: f.sql.replacingOccurrences(of: "AS $$", with: "AS $$ -- \(mark)")) : f
        }
    }

    /// `migrator.migrate()`, a database error with its message (the SQLSTATE alone says little).
    static func migrate(_ migrator: Migrator) throws -> [Int] {
        do {
            return try migrator.migrate()
        } catch let error as PGError {
            throw HarnessFailure(description: "migrate on Citus: \(error.debugDescription)")
        }
    }

    func testMigratingADistributedDatabaseAppliesANewMigrationAndChangedFunctionsOnEveryNode() throws {
        let citus = try CitusCluster.sharedOrSkip()
        let name = try citus.bouncerDatabase(label: "upgrade", shardCount: 4)
        let pool = ConnectionPool(settings: citus.coordinator.settings.database(name), configuration: .init(size: 1))
        defer { pool.shutdown() }
        let nodes = [citus.coordinator] + citus.workers
        /// Per node, whether `function`'s body has `mark`; then whether every shard of `purchases` has the probe's column.
        func onNodes(_ function: String, _ mark: String) throws -> [String] {
            try nodes.map { node in
                let c = try Connection(settings: node.settings.database(name))
                let marked = try c.query("""
                    SELECT bool_or(strpos(p.prosrc, \(mark)) > 0) AS m FROM pg_proc p WHERE p.proname = \(function)
                    """).first?.decode("m", as: Bool?.self) ?? nil
                return marked == true ? "marked" : "old"
            } + [try pool.withConnection { c in
                try c.query("""
                    SELECT count(*) FILTER (WHERE success)::int8 AS ok, count(*)::int8 AS n FROM run_command_on_shards(
                        'purchases', $$SELECT count(upgrade_probe) FROM %s$$)
                    """).first.map { "\(try $0.decode("ok", as: Int64.self)) of \(try $0.decode("n", as: Int64.self)) shards" }
                    ?? ""
            }]
        }

        // A migration and a changed function file: one transaction, through the coordinator.
        let first = Self.functions(changing: "bouncer_webhook_time", mark: "release two")
        XCTAssertEqual(try Self.migrate(Migrator(pool: pool, migrations: Migration.embedded + [Self.probe], functions: first)),
                       [89])
        XCTAssertEqual(try onNodes("bouncer_webhook_time", "release two"), ["marked", "marked", "marked", "4 of 4 shards"])
        let probed = try pool.withConnection { c in
            try c.query("SELECT count(*)::int8 AS n FROM purchases WHERE upgrade_probe IS NOT NULL").first?
                .decode("n", as: Int64.self)
        }
        XCTAssertEqual(probed, 0, "a new column reads through the coordinator")

        // A release with only a changed function file (no migration): its own transaction.
        let second = Self.functions(changing: "bouncer_webhook_time", mark: "release three")
        XCTAssertEqual(try Self.migrate(Migrator(pool: pool, migrations: Migration.embedded + [Self.probe], functions: second)),
                       [])
        XCTAssertEqual(try onNodes("bouncer_webhook_time", "release three"), ["marked", "marked", "marked", "4 of 4 shards"])

        // deploy/citus.sql after the upgrade: nothing new to place, nothing dropped.
        XCTAssertTrue(try citus.distribute(database: name).contains("every table is already placed"))
    }
}

/// `SQLScript.statements`, which the migrator uses on Citus: every migration of schema/ cut as psql would.
final class SQLScriptTests: XCTestCase {
    func testSplitsAtSemicolonsOutsideQuotesAndComments() {
        let script = """
            CREATE TABLE a (x text DEFAULT 'a;b''c;');  -- a comment; with a semicolon
            /* a block; /* nested; */ still; */
            CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END; $$;
            DO $body$ BEGIN PERFORM 'x$$;'; END $body$;
            SELECT E'it\\'s; fine', "odd;name", $1;
            ;  -- nothing
            SELECT 2
            """
        XCTAssertEqual(SQLScript.statements(script).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }, [
            "CREATE TABLE a (x text DEFAULT 'a;b''c;')",
            "-- a comment; with a semicolon\n/* a block; /* nested; */ still; */\nCREATE FUNCTION f() RETURNS int "
                + "LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END; $$",
            "DO $body$ BEGIN PERFORM 'x$$;'; END $body$",
            "SELECT E'it\\'s; fine', \"odd;name\", $1",
            "-- nothing\nSELECT 2",
        ])
    }

    /// The migrator's path on Citus (every migration statement by statement) gives, on one node, the schema its
    /// single-node path (each migration one script) gives.
    func testEveryMigrationStatementByStatementGivesTheSameSchema() throws {
        func schema(split: Bool) throws -> [String] {
            let settings = try TestDatabase.create(label: split ? "script-split" : "script-whole")
            let pool = ConnectionPool(settings: settings, configuration: .init(size: 1))
            defer { pool.shutdown() }
            var migrator = Migrator(pool: pool)
            migrator.statementByStatement = split
            XCTAssertEqual(try migrator.migrate(), Migration.embedded.map(\.version))
            return try Connection(settings: settings).query("""
                SELECT c.relname::text || ' ' || c.relkind::text || ' ' || coalesce(pg_get_indexdef(c.oid), '') || ' '
                    || coalesce((SELECT string_agg(a.attname || ':' || format_type(a.atttypid, a.atttypmod), ','
                                 ORDER BY a.attnum)
                        FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '') AS d
                FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
                UNION ALL
                SELECT p.oid::regprocedure::text || md5(p.prosrc) FROM pg_proc p
                WHERE p.pronamespace = 'public'::regnamespace
                UNION ALL
                SELECT conrelid::regclass::text || conname::text || pg_get_constraintdef(oid) FROM pg_constraint
                WHERE connamespace = 'public'::regnamespace
                UNION ALL
                SELECT tgrelid::regclass::text || tgname::text || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
                ORDER BY 1
                """).map { try $0.decode("d", as: String.self) }
        }
        let whole = try schema(split: false)
        XCTAssertGreaterThan(whole.count, 100)
        XCTAssertEqual(try schema(split: true), whole)
    }
}
