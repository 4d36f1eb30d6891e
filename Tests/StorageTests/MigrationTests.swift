import Crypto
import Domain
import Foundation
import Postgres
@testable import Storage
import Synchronization
import TestSupport
import XCTest

final class MigrationTests: XCTestCase {
    var settings: ConnectionSettings!
    var pool: ConnectionPool!

    override func setUpWithError() throws {
        settings = try TestDatabase.create(label: name)
        pool = ConnectionPool(settings: settings, configuration: .init(size: 2))
    }

    override func tearDown() {
        pool?.shutdown()
    }

    private static var schemaDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("schema")
    }

    /// The files of schema/ as (version, name, bytes), in version order.
    private static func schemaFiles() throws -> [(version: Int, name: String, bytes: [UInt8])] {
        let names = try FileManager.default.contentsOfDirectory(atPath: schemaDirectory.path).filter { $0.hasSuffix(".sql") }
        var files: [(version: Int, name: String, bytes: [UInt8])] = []
        for file in names {
            let parts = file.dropLast(4).split(separator: "_", maxSplits: 1)
            let version = try XCTUnwrap(parts.first.flatMap { Int($0) }, "\(file) must start with a number")
            let name = try XCTUnwrap(parts.count == 2 ? String(parts[1]) : nil, "\(file) must be NNNN_name.sql")
            let bytes = try XCTUnwrap(FileManager.default.contents(atPath: schemaDirectory.appendingPathComponent(file).path))
            files.append((version, name, Array(bytes)))
        }
        return files.sorted { $0.version < $1.version }
    }

    /// The build embeds schema/*.sql (the EmbedSchema plugin): same names, same order, same bytes, and the
    /// checksum the migrator records is the SHA-256 of the file (what `sha256sum schema/*.sql` prints), or of its
    /// released text for a rewritten one.
    func testEmbeddedMigrationsAreTheSchemaFiles() throws {
        let files = try Self.schemaFiles()
        XCTAssertGreaterThanOrEqual(files.count, 3)
        XCTAssertEqual(Migration.embedded.map(\.version), files.map(\.version))
        XCTAssertEqual(Migration.embedded.map(\.name), files.map(\.name))
        XCTAssertEqual(Migration.embedded.first?.version, 1)
        XCTAssertEqual(Migration.embedded.map(\.version), Migration.embedded.map(\.version).sorted())
        XCTAssertEqual(Set(Migration.embedded.map(\.version)).count, Migration.embedded.count)
        for (migration, file) in zip(Migration.embedded, files) {
            // Bytes, not String ==, which would equate canonically equivalent Unicode with different checksums.
            XCTAssertTrue(Array(migration.sql.utf8) == file.bytes,
                          "the embedded SQL of schema/\(String(format: "%04d", file.version))_\(file.name).sql differs from the file")
        }

        XCTAssertEqual(try Migrator(pool: pool).migrate(), files.map(\.version))
        let recorded = try pool.withConnection { c in
            try c.query("SELECT version, name, checksum FROM schema_migrations ORDER BY version").map {
                "\(try $0.decode("version", as: Int.self)) \(try $0.decode("name", as: String.self)) \(try $0.decode("checksum", as: String.self))"
            }
        }
        let expected = zip(files, Migration.embedded).map { file, migration in
            "\(file.version) \(file.name) "
                + (migration.releasedChecksum ?? Digest.sha256(file.bytes).map { String(format: "%02x", $0) }.joined())
        }
        XCTAssertEqual(recorded, expected)
    }

    func testMigrateAppliesEverythingOnceAndIsIdempotent() throws {
        let lines = Mutex<[String]>([])
        let migrator = Migrator(pool: pool) { line in lines.withLock { $0.append(line) } }
        XCTAssertEqual(try migrator.appliedVersions(), [])
        XCTAssertEqual(try migrator.migrate(), Migration.embedded.map(\.version))
        XCTAssertEqual(try migrator.migrate(), [])
        XCTAssertEqual(try migrator.appliedVersions(), Migration.embedded.map(\.version))
        XCTAssertEqual(lines.withLock { $0 }.first, "migrate: applied 0001_init")
        let tables = try pool.withConnection { c in
            try c.query("SELECT tablename::text AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1").map { try $0.decode("t", as: String.self) }
        }
        XCTAssertEqual(tables, ["account_quotas", "account_usage", "accounts", "api_keys", "app_store_credentials", "app_transactions", "audit_log", "console_sessions", "consumption_requests", "exchange_rates", "grants", "jws_headers",
                                "mass_renewal_extensions", "members", "notifications", "overview_days", "overview_instants", "overview_trials", "ownership_events", "pending_renewals", "products", "project_keys",
                                "projects", "purchase_changes", "purchases", "reconcile_changes", "reconcile_checks", "reconcile_cursors", "reconcile_refund_revisions",
                                "reconcile_runs", "renewal_extensions", "retention_decisions", "retention_rules", "revenue_cohorts", "revenue_days", "revenue_ltv_customers", "revenue_ltv_days", "revenue_ltv_purchases", "revenue_movement_days", "revenue_run_days", "revenue_runs", "revenue_settings", "revenue_transactions", "revenue_value_days", "revenue_values", "schema_functions", "schema_migrations", "signing_keys",
                                "subscriptions", "tax_rates", "transaction_finishes", "transaction_jws", "transactions", "webhook_attempts", "webhook_endpoints",
                                "webhook_entitlement_states", "webhook_events", "webhook_purchase_states",
                                "webhook_queue"])
    }

    /// 0005 moves each project's keys into project_keys as its current keys: apps and backends keep working.
    func testKeyRotationMigrationKeepsExistingKeys() throws {
        let before = Migration.embedded.filter { $0.version < 5 }
        try Migrator(pool: pool, migrations: before).migrate()
        let id = UUID()
        let createdAt = Date(timeIntervalSince1970: 1_780_272_000)
        try pool.withConnection { c in
            _ = try c.execute("""
                INSERT INTO projects (id, name, bundle_id, public_key, secret_key_hash, created_at, updated_at)
                VALUES (\(id), 'Old', 'com.old', 'pk_0123456789abcdef0123456789abcdef', \([UInt8]([1, 2, 3])),
                    \(createdAt), \(createdAt))
                """)
        }
        XCTAssertEqual(try Migrator(pool: pool).migrate(), Migration.embedded.filter { $0.version >= 5 }.map(\.version))
        let store = PostgresProjectStore(pool: pool)
        let project = try XCTUnwrap(try store.project(publicKey: "pk_0123456789abcdef0123456789abcdef", at: createdAt))
        XCTAssertEqual(project.id, id)
        XCTAssertEqual(project.publicKey, "pk_0123456789abcdef0123456789abcdef")
        XCTAssertEqual(project.appAccountTokenPolicy, .ignore)
        XCTAssertEqual(try store.liveSecretKeyHashes(projectId: id, at: createdAt), [[1, 2, 3]])
        let keys = try store.keys(projectId: id)
        XCTAssertEqual(keys.map(\.expiresAt), [nil, nil])
        XCTAssertEqual(keys.map(\.createdAt), [createdAt, createdAt])
        // The old columns are gone: nothing can read a key from two places.
        let columns = try pool.withConnection { c in
            try c.query("""
                SELECT column_name::text AS c FROM information_schema.columns
                WHERE table_name = 'projects' AND column_name IN ('public_key', 'secret_key_hash')
                """).count
        }
        XCTAssertEqual(columns, 0)
    }

    /// 0020: in projects already on `require_match` or `prefer`, UUID user ids become lowercase (issue 21): other
    /// spellings' bindings move to the canonical id (one row for two spellings), grants follow; `ignore` projects keep
    /// their ids as posted.
    func testCanonicalUserIdMigrationMergesSpellings() throws {
        try Migrator(pool: pool, migrations: Migration.embedded.filter { $0.version < 20 }).migrate()
        let purchases = PostgresPurchaseStore(pool: pool)
        let lower = "6f1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d5"
        let spellings = [lower.uppercased(), "6F1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d5"]
        var made: [Project] = []
        for (n, policy) in [(1, AppAccountTokenPolicy.requireMatch), (2, .ignore)] {
            let project = try Fixtures.insertProjectRows(pool, n, policy: .share, tokenPolicy: policy)
            for user in spellings {
                try recordUnderEarlierSchema(pool, Fixtures.monthly("1", start: 0), userId: user, project: project,
                                             now: Fixtures.t0)
            }
            try pool.withConnection { c in
                _ = try c.execute("""
                    INSERT INTO grants (project_id, id, user_id, entitlement, reason, created_at)
                    VALUES (\(project.id), \(UUID()), \(spellings[0]), 'gift', 'r', \(Fixtures.t0))
                    """)
            }
            made.append(project)
        }
        XCTAssertEqual(try Migrator(pool: pool).migrate(), Migration.embedded.filter { $0.version >= 20 }.map(\.version))
        func rows(_ project: Project) throws -> [String] {
            try pool.withConnection { c in
                try c.query("""
                    SELECT user_id || ' ' || (revoked_at IS NULL)::text AS r FROM subscriptions
                    WHERE project_id = \(project.id)
                    UNION ALL SELECT 'grant ' || user_id FROM grants WHERE project_id = \(project.id)
                    """).map { try $0.decode("r", as: String.self) }.sorted()
            }
        }
        XCTAssertEqual(try rows(made[0]), (["\(lower) true", "grant \(lower)"] + spellings.map { "\($0) false" }).sorted())
        XCTAssertEqual(try purchases.ownedPurchases(userId: lower, project: made[0]).count, 1)
        XCTAssertEqual(try rows(made[1]), (["grant \(spellings[0])"] + spellings.map { "\($0) true" }).sorted(),
                       "ignore keeps ids as posted")
    }

    func testTenantKeysStartWithProjectID() throws {
        try Migrator(pool: pool).migrate()
        try pool.withConnection { c in
            // First primary-key column of every table except projects, the migration logs, the server-wide token
            // signing keys (one JWKS for all projects) and console sessions (an admin's sign-in spans every project):
            // none is a tenant table.
            let pks = try c.query("""
                SELECT cl.relname::text AS tbl, a.attname::text AS col
                FROM pg_constraint con
                JOIN pg_class cl ON cl.oid = con.conrelid
                JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1]
                WHERE con.contype = 'p' AND cl.relnamespace = 'public'::regnamespace
                  AND cl.relname NOT IN ('projects', 'schema_migrations', 'schema_functions', 'signing_keys',
                      'console_sessions', 'accounts', 'api_keys', 'account_usage', 'account_quotas', 'members', 'audit_log',
                      'exchange_rates', 'jws_headers', 'tax_rates')
                """)
            // grants (0014), five webhook tables (0012), purchase_changes (0025), webhook_queue (0030),
            // overview_days, overview_instants, overview_trials (0035), retention_rules, retention_decisions (0057),
            // mass_renewal_extensions (0056),
            // revenue_settings, revenue_transactions (0062), transaction_jws (0066), reconcile_refund_revisions (0046),
            // transaction_finishes (0047), revenue_days (0072), revenue_runs, revenue_run_days (0078), revenue_values,
            // revenue_value_days, revenue_cohorts (0085), revenue_ltv_purchases, revenue_ltv_customers,
            // revenue_ltv_days (0086), revenue_movement_days (0087) added to 16;
            // exchange_rates (0062) and tax_rates (0093) are the operator's, published for every
            // project, and jws_headers (0066) Apple's certificate chains
            XCTAssertEqual(pks.count, 45)
            for row in pks {
                let table = try row.decode("tbl", as: String.self)
                XCTAssertEqual(try row.decode("col", as: String.self), "project_id", table)
            }
            // Above the tenants (0050): an account's tables start with the account.
            let accountKeys = try c.query("""
                SELECT cl.relname::text AS tbl, a.attname::text AS col
                FROM pg_constraint con
                JOIN pg_class cl ON cl.oid = con.conrelid
                JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1]
                WHERE con.contype = 'p' AND cl.relname IN ('accounts', 'api_keys', 'account_usage', 'account_quotas', 'members')
                ORDER BY 1
                """).map { "\(try $0.decode("tbl", as: String.self)).\(try $0.decode("col", as: String.self))" }
            XCTAssertEqual(accountKeys, ["account_quotas.account_id", "account_usage.account_id", "accounts.id",
                                         "api_keys.account_id", "members.account_id"])
            // Every foreign key includes project_id (or is projects.id itself), except those to accounts and a
            // member's console sessions (0051: above the tenants too).
            let fks = try c.query("""
                SELECT con.conname::text AS name,
                       bool_or(a.attname = 'project_id') AS has_project
                FROM pg_constraint con
                JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = ANY (con.conkey)
                WHERE con.contype = 'f' AND con.connamespace = 'public'::regnamespace
                  AND con.confrelid NOT IN ('accounts'::regclass, 'members'::regclass)
                GROUP BY con.conname
                """)
            XCTAssertGreaterThanOrEqual(fks.count, 6)
            for row in fks {
                let name = try row.decode("name", as: String.self)
                XCTAssertTrue(try row.decode("has_project", as: Bool.self), name)
            }
        }
    }

    // MARK: - Functions (schema/functions/)

    private func functionLog(_ lines: borrowing Mutex<[String]>) -> [String] {
        lines.withLock { $0 }.filter { $0.hasPrefix("migrate: applied functions") }
    }

    private func scalar(_ sql: String) throws -> String {
        try pool.withConnection { try $0.query(Query(unsafeSQL: sql))[0].decode(at: 0, as: String.self) }
    }

    /// The build embeds schema/functions/*.sql as they are, and a migrated database records each one's SHA-256.
    func testEmbeddedFunctionsAreTheFunctionFiles() throws {
        let directory = Self.schemaDirectory.appendingPathComponent("functions")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }.sorted()
        XCTAssertEqual(SchemaFunction.embedded.map { $0.name + ".sql" }, names)
        var expected: [String] = []
        for (function, file) in zip(SchemaFunction.embedded, names) {
            let bytes = try XCTUnwrap(FileManager.default.contents(atPath: directory.appendingPathComponent(file).path))
            XCTAssertTrue(Array(function.sql.utf8) == Array(bytes), "the embedded SQL of schema/functions/\(file) differs")
            expected.append("\(function.name) " + Digest.sha256(Array(bytes)).map { String(format: "%02x", $0) }.joined())
        }
        try Migrator(pool: pool).migrate()
        let recorded = try pool.withConnection { c in
            try c.query("SELECT name || ' ' || checksum AS r FROM schema_functions ORDER BY name COLLATE \"C\"").map {
                try $0.decode("r", as: String.self)
            }
        }
        XCTAssertEqual(recorded, expected)
    }

    /// Every function of the schema has its file, and every file its function: the current definition of a function
    /// is in exactly one place (migrations keep tables, indexes, triggers and data, and their history).
    func testEveryFunctionLivesInItsFile() throws {
        try Migrator(pool: pool).migrate()
        let functions = try pool.withConnection { c in
            try c.query("""
                SELECT DISTINCT proname::text AS name FROM pg_proc
                WHERE pronamespace = 'public'::regnamespace ORDER BY 1
                """).map { try $0.decode("name", as: String.self) }
        }
        XCTAssertEqual(functions, SchemaFunction.embedded.map(\.name).sorted())
    }

    /// A change to a function is an edit of its file, never a migration's copy of its body (0008 restated 164 lines
    /// of 0006 to add one parameter): after 0025, when the files arrived, a migration creates a function only to
    /// declare a new trigger's (a placeholder its file replaces in the same commit), never one created before. A
    /// placeholder a later migration drops with its trigger (0072's, dropped by 0078) has no file any more.
    func testMigrationsAfterTheFilesCopyNoFunctionBody() {
        func created(_ sql: String) -> [String] {
            let words = sql.lowercased().split { !($0.isLetter || $0.isNumber || $0 == "_") }
            return words.indices.compactMap { i in
                guard words[i] == "function", i > 0, i + 1 < words.count else { return nil }
                let previous = words[i - 1]
                return previous == "create" || (previous == "replace" && i > 2 && words[i - 3] == "create")
                    ? String(words[i + 1]) : nil
            }
        }
        func dropped(_ sql: String) -> [String] {
            let words = sql.lowercased().split { !($0.isLetter || $0.isNumber || $0 == "_") }
            return words.indices.compactMap { i in
                guard words[i] == "function", i > 0, words[i - 1] == "drop", i + 1 < words.count else { return nil }
                return words[i + 1] == "if" && i + 3 < words.count ? String(words[i + 3]) : String(words[i + 1])
            }
        }
        var seen = Set<String>()
        let files = Set(SchemaFunction.embedded.map(\.name))
        for (index, migration) in Migration.embedded.enumerated() {
            let droppedLater = Set(Migration.embedded.dropFirst(index + 1).flatMap { dropped($0.sql) })
            for name in created(migration.sql) {
                if migration.version > 25 {
                    let label = "\(migration.version)_\(migration.name)"
                    XCTAssertFalse(seen.contains(name), "\(label) redefines \(name): edit schema/functions/\(name).sql")
                    XCTAssertTrue(files.contains(name) || droppedLater.contains(name),
                                  "\(label) declares \(name): its body goes in schema/functions/")
                }
                seen.insert(name)
            }
        }
    }

    /// A function file is applied once, again only when its text changes, and the record follows it.
    func testChangedFunctionIsReappliedAndUnchangedIsNot() throws {
        let migrations = [Migration(version: 1, name: "one", sql: "CREATE TABLE one (id int);")]
        func answer(_ f: String, _ value: String) -> SchemaFunction {
            SchemaFunction(name: f, sql: "CREATE OR REPLACE FUNCTION \(f)() RETURNS text LANGUAGE sql AS $$ SELECT '\(value)' $$;\n")
        }
        let lines = Mutex<[String]>([])
        func migrate(_ functions: [SchemaFunction]) throws -> [Int] {
            try Migrator(pool: pool, migrations: migrations, functions: functions) { line in
                lines.withLock { $0.append(line) }
            }.migrate()
        }
        XCTAssertEqual(try migrate([answer("f_b", "b1"), answer("f_a", "a1")]), [1])
        XCTAssertEqual(functionLog(lines), ["migrate: applied functions f_a, f_b"])
        XCTAssertEqual(try scalar("SELECT f_a() || f_b()"), "a1b1")
        let firstApplied = try scalar("SELECT applied_at::text FROM schema_functions WHERE name = 'f_b'")

        XCTAssertEqual(try migrate([answer("f_a", "a1"), answer("f_b", "b1")]), [])
        XCTAssertEqual(functionLog(lines).count, 1, "unchanged files are not applied again")

        XCTAssertEqual(try migrate([answer("f_a", "a2"), answer("f_b", "b1")]), [])
        XCTAssertEqual(functionLog(lines).last, "migrate: applied functions f_a")
        XCTAssertEqual(try scalar("SELECT f_a() || f_b()"), "a2b1")
        XCTAssertEqual(try scalar("SELECT applied_at::text FROM schema_functions WHERE name = 'f_b'"), firstApplied)
        let expected = Digest.sha256(Array(answer("f_a", "a2").sql.utf8)).map { String(format: "%02x", $0) }.joined()
        XCTAssertEqual(try scalar("SELECT checksum FROM schema_functions WHERE name = 'f_a'"), expected)
    }

    /// An SQL function may call one that sorts after it (no dependency order to keep); a broken body fails the run
    /// and rolls back every function of it, recording none, and the migration they were to commit with.
    func testFunctionsNeedNoOrderAndABrokenOneAppliesNone() throws {
        let migrations = [Migration(version: 1, name: "one", sql: "CREATE TABLE one (id int);")]
        let outer = SchemaFunction(name: "a_outer", sql: """
            CREATE OR REPLACE FUNCTION a_outer() RETURNS int LANGUAGE sql AS $$ SELECT b_inner() + 1 $$;
            """)
        let inner = SchemaFunction(name: "b_inner", sql: """
            CREATE OR REPLACE FUNCTION b_inner() RETURNS int LANGUAGE sql AS $$ SELECT 41 $$;
            """)
        let broken = SchemaFunction(name: "c_broken", sql: """
            CREATE OR REPLACE FUNCTION c_broken() RETURNS int LANGUAGE sql AS $$ SELECT FROM WHERE $$;
            """)
        XCTAssertThrowsError(try Migrator(pool: pool, migrations: migrations, functions: [outer, inner, broken]).migrate()) {
            XCTAssertEqual(($0 as? PGError)?.sqlState, "42601")
        }
        XCTAssertEqual(try scalar("SELECT count(*)::text FROM pg_proc WHERE proname IN ('a_outer', 'b_inner')"), "0")
        XCTAssertEqual(try scalar("SELECT count(*)::text FROM schema_functions"), "0")
        XCTAssertEqual(try scalar("SELECT (to_regclass('one') IS NULL)::text"), "true")
        XCTAssertEqual(try Migrator(pool: pool, migrations: migrations, functions: [outer, inner]).migrate(), [1])
        XCTAssertEqual(try scalar("SELECT a_outer()::text"), "42")
    }

    /// A migration that replaces a function is followed by the function's file; a database a newer binary migrated
    /// (migrations this one does not know) keeps the newer definitions.
    func testFilesWinOverMigrationsAndNewerBinariesWinOverFiles() throws {
        let v1 = [Migration(version: 1, name: "one", sql: "CREATE TABLE one (id int);")]
        let file = SchemaFunction(name: "f", sql: "CREATE OR REPLACE FUNCTION f() RETURNS text LANGUAGE sql AS $$ SELECT 'file' $$;")
        XCTAssertEqual(try Migrator(pool: pool, migrations: v1, functions: [file]).migrate(), [1])
        let v2 = v1 + [Migration(version: 2, name: "two", sql: """
            CREATE OR REPLACE FUNCTION f() RETURNS text LANGUAGE sql AS $$ SELECT 'migration' $$;
            """)]
        XCTAssertEqual(try Migrator(pool: pool, migrations: v2, functions: [file]).migrate(), [2])
        XCTAssertEqual(try scalar("SELECT f()"), "file", "the run that applied a migration re-applied every file")

        let newer = SchemaFunction(name: "f", sql: "CREATE OR REPLACE FUNCTION f() RETURNS text LANGUAGE sql AS $$ SELECT 'newer' $$;")
        let v3 = v2 + [Migration(version: 3, name: "three", sql: "CREATE TABLE three (id int);")]
        XCTAssertEqual(try Migrator(pool: pool, migrations: v3, functions: [newer]).migrate(), [3])
        let lines = Mutex<[String]>([])
        XCTAssertEqual(try Migrator(pool: pool, migrations: v2, functions: [file]) { line in
            lines.withLock { $0.append(line) }
        }.migrate(), [])
        XCTAssertEqual(try scalar("SELECT f()"), "newer")
        XCTAssertTrue(lines.withLock { $0 }.contains("migrate: functions left as the newer version defined them"))
    }

    /// The functions a fresh database ends with are those of a database migrated by an earlier release (every
    /// migration up to 0021, before schema/functions/ existed) and then by this one: same signatures, same bodies,
    /// same triggers.
    func testFreshDatabaseHasTheDefinitionsOfAnUpgradedOne() throws {
        func definitions(_ pool: ConnectionPool) throws -> [String] {
            try pool.withConnection { c in
                try c.query("""
                    SELECT p.oid::regprocedure::text || E'\n' || pg_get_functiondef(p.oid) AS d FROM pg_proc p
                    WHERE p.pronamespace = 'public'::regnamespace
                    UNION ALL
                    SELECT t.tgname || ' ' || pg_get_triggerdef(t.oid) FROM pg_trigger t
                    JOIN pg_class cl ON cl.oid = t.tgrelid
                    WHERE cl.relnamespace = 'public'::regnamespace AND NOT t.tgisinternal
                    ORDER BY 1
                    """).map { try $0.decode("d", as: String.self) }
            }
        }
        XCTAssertEqual(try Migrator(pool: pool).migrate(), Migration.embedded.map(\.version))
        let fresh = try definitions(pool)
        XCTAssertGreaterThanOrEqual(fresh.count, 20)

        let upgraded = ConnectionPool(settings: try TestDatabase.create(label: name + "-upgraded"),
                                      configuration: .init(size: 1))
        defer { upgraded.shutdown() }
        let earlier = Migration.embedded.filter { $0.version <= 21 }
        XCTAssertEqual(try Migrator(pool: upgraded, migrations: earlier).migrate(), earlier.map(\.version))
        XCTAssertEqual(try Migrator(pool: upgraded).migrate(), Migration.embedded.filter { $0.version > 21 }.map(\.version))
        XCTAssertEqual(try definitions(upgraded), fresh)
    }

    /// A released migration rewritten with its released checksum on the first line is the same migration to every
    /// database: one that applied the released text accepts it, a fresh one records the released checksum (so the
    /// previous binary accepts that database too); a rewrite that names another checksum is an edit.
    func testRewrittenMigrationKeepsItsReleasedIdentity() throws {
        let released = "CREATE TABLE one (id int);\nCREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n"
        let sum = Digest.sha256(Array(released.utf8)).map { String(format: "%02x", $0) }.joined()
        let rewritten = "-- released-sha256: \(sum)\nCREATE TABLE one (id int);\n"
        XCTAssertEqual(try Migrator(pool: pool, migrations: [Migration(version: 1, name: "one", sql: released)]).migrate(), [1])
        XCTAssertEqual(try Migrator(pool: pool, migrations: [Migration(version: 1, name: "one", sql: rewritten)]).migrate(), [])
        XCTAssertEqual(try scalar("SELECT checksum FROM schema_migrations"), sum)

        let fresh = ConnectionPool(settings: try TestDatabase.create(label: name + "-fresh"), configuration: .init(size: 1))
        defer { fresh.shutdown() }
        XCTAssertEqual(try Migrator(pool: fresh, migrations: [Migration(version: 1, name: "one", sql: rewritten)]).migrate(), [1])
        XCTAssertEqual(try Migrator(pool: fresh, migrations: [Migration(version: 1, name: "one", sql: released)]).migrate(), [])

        let other = "-- released-sha256: \(String(repeating: "0", count: 64))\nCREATE TABLE one (id int);\n"
        XCTAssertThrowsError(try Migrator(pool: pool, migrations: [Migration(version: 1, name: "one", sql: other)]).migrate()) {
            XCTAssertEqual(($0 as? MigrationError)?.code, .checksumMismatch)
        }
    }

    /// The rewritten migrations, pinned: 0006 lost the bodies no database that applies it from now on ever runs
    /// (schema/README.md, "Rewritten migrations"). Its released checksum now guards nothing at run time, so this does:
    /// the text cannot change again, and no other migration becomes rewritten unnoticed.
    func testRewrittenMigrationsArePinned() {
        let rewritten = Migration.embedded.filter { $0.releasedChecksum != nil }
        XCTAssertEqual(rewritten.map(\.version), [6])
        XCTAssertEqual(rewritten.first?.releasedChecksum, "1cc2753cbdfcdb631a48079d9901d0895d5f1b77e8b0a603a627b1753f046fb0")
        XCTAssertEqual(rewritten.map { Digest.sha256(Array($0.sql.utf8)).map { String(format: "%02x", $0) }.joined() },
                       ["b0b965f235a2b95042c018df12ae959de2aba2986fdc24e76e96a424e7b90a19"],
                       "schema/0006 was rewritten once; it cannot change again")
    }

    func testEditedAppliedMigrationIsRejected() throws {
        let original = [Migration(version: 1, name: "one", sql: "CREATE TABLE one (project_id uuid PRIMARY KEY);")]
        XCTAssertEqual(try Migrator(pool: pool, migrations: original).migrate(), [1])
        let edited = [Migration(version: 1, name: "one", sql: "CREATE TABLE one (project_id uuid PRIMARY KEY, x int);")]
        XCTAssertThrowsError(try Migrator(pool: pool, migrations: edited).migrate()) { error in
            XCTAssertEqual((error as? MigrationError)?.code, .checksumMismatch)
            XCTAssertEqual((error as? MigrationError)?.version, 1)
        }
        // The advisory lock was released despite the error: the original still migrates (no-op).
        XCTAssertEqual(try Migrator(pool: pool, migrations: original).migrate(), [])
    }

    func testFailingMigrationRollsBackOnlyItself() throws {
        let migrations = [
            Migration(version: 1, name: "good", sql: "CREATE TABLE good (id int);"),
            Migration(version: 2, name: "bad", sql: "CREATE TABLE half (id int); SELECT 1 / 0;"),
        ]
        XCTAssertThrowsError(try Migrator(pool: pool, migrations: migrations).migrate()) {
            XCTAssertEqual(($0 as? PGError)?.sqlState, "22012")
        }
        XCTAssertEqual(try Migrator(pool: pool, migrations: migrations).appliedVersions(), [1])
        let half = try pool.withConnection { try $0.query("SELECT to_regclass('half') IS NULL AS gone")[0].decode("gone", as: Bool.self) }
        XCTAssertTrue(half)
    }

    func testConcurrentMigratorsApplyEachMigrationOnce() throws {
        // Not idempotent on purpose: a second application would fail with "already exists".
        let migrations = [
            Migration(version: 1, name: "a", sql: "CREATE TABLE a (id int); SELECT pg_sleep(0.2);"),
            Migration(version: 2, name: "b", sql: "CREATE TABLE b (id int);"),
        ]
        let results = Mutex<[Result<[Int], any Error>]>([])
        let group = DispatchGroup()
        let settings = self.settings!
        for _ in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                let pool = ConnectionPool(settings: settings, configuration: .init(size: 1))
                let result = Result { try Migrator(pool: pool, migrations: migrations).migrate() }
                pool.shutdown()
                results.withLock { $0.append(result) }
                group.leave()
            }
        }
        group.wait()
        let all = results.withLock { $0 }
        XCTAssertEqual(all.count, 4)
        let applied = try all.map { try $0.get() }
        XCTAssertEqual(applied.filter { !$0.isEmpty }, [[1, 2]])
        XCTAssertEqual(try Migrator(pool: pool, migrations: migrations).appliedVersions(), [1, 2])
    }

    /// 0004 (environment identity) on a database holding 0003-era rows: every row is kept and gains its
    /// environment in its key; transactions gain the signed bundle id (else the project's).
    func testEnvironmentIdentityMigrationKeepsEarlierRows() throws {
        let early = Migration.embedded.filter { $0.version <= 3 }
        XCTAssertEqual(try Migrator(pool: pool, migrations: early).migrate(), [1, 2, 3])
        let project = "0d5e7a52-8f43-4b8e-9a51-1c7b0b6c2f10"
        try pool.withConnection { c in
            try c.executeScript(unsafeSQL: """
                INSERT INTO projects (id, name, bundle_id, public_key, secret_key_hash)
                VALUES ('\(project)', 'Old', 'com.example.old', 'pk_old', '\\x00');
                INSERT INTO transactions (project_id, transaction_id, original_transaction_id, product_id, type,
                    environment, purchase_date, signed_date, payload)
                VALUES ('\(project)', '2000', '1000', 'pro', 'Auto-Renewable Subscription', 'Production',
                        '2026-01-01Z', '2026-01-01Z', '{"bundleId": "com.example.signed"}'),
                       ('\(project)', '3000', '3000', 'life', 'Non-Consumable', 'Sandbox',
                        '2026-01-01Z', '2026-01-01Z', '{}');
                INSERT INTO purchases (project_id, original_transaction_id, latest_transaction_id, product_id, type,
                    environment, latest_signed_date)
                VALUES ('\(project)', '1000', '2000', 'pro', 'Auto-Renewable Subscription', 'Production', '2026-01-01Z'),
                       ('\(project)', '3000', '3000', 'life', 'Non-Consumable', 'Sandbox', '2026-01-01Z');
                INSERT INTO subscriptions (project_id, user_id, original_transaction_id)
                VALUES ('\(project)', 'alice', '1000'), ('\(project)', 'bob', '3000');
                INSERT INTO ownership_events (project_id, original_transaction_id, from_user_id, to_user_id, policy)
                VALUES ('\(project)', '1000', 'carol', 'alice', 'transfer');
                INSERT INTO pending_renewals (project_id, original_transaction_id, environment, signed_date, payload)
                VALUES ('\(project)', '4000', 'Sandbox', '2026-01-01Z', '{}');
                INSERT INTO notifications (project_id, notification_uuid, notification_type, environment, payload)
                VALUES ('\(project)', '00000000-0000-4000-8000-000000000001', 'TEST', 'Sandbox', '{}'),
                       ('\(project)', '00000000-0000-4000-8000-000000000002', 'TEST', NULL, '{}');
                """)
        }
        XCTAssertEqual(try Migrator(pool: pool).migrate(), Migration.embedded.map(\.version).filter { $0 > 3 })
        func rows(_ sql: String) throws -> [String] {
            try pool.withConnection { c in
                try c.query(Query(unsafeSQL: sql)).map { try $0.decode(at: 0, as: String.self) }
            }
        }
        XCTAssertEqual(try rows("""
            SELECT concat_ws(' ', environment, transaction_id, original_transaction_id, bundle_id) FROM transactions
            ORDER BY transaction_id
            """), ["Production 2000 1000 com.example.signed", "Sandbox 3000 3000 com.example.old"])
        XCTAssertEqual(try rows("""
            SELECT concat_ws(' ', environment, original_transaction_id, latest_transaction_id) FROM purchases
            ORDER BY 1
            """), ["Production 1000 2000", "Sandbox 3000 3000"])
        XCTAssertEqual(try rows("""
            SELECT concat_ws(' ', user_id, environment, original_transaction_id) FROM subscriptions ORDER BY 1
            """), ["alice Production 1000", "bob Sandbox 3000"])
        XCTAssertEqual(try rows("""
            SELECT concat_ws(' ', environment, original_transaction_id, from_user_id, to_user_id) FROM ownership_events
            """), ["Production 1000 carol alice"])
        XCTAssertEqual(try rows("SELECT concat_ws(' ', environment, original_transaction_id) FROM pending_renewals"),
                       ["Sandbox 4000"])
        XCTAssertEqual(try rows("""
            SELECT concat_ws(' ', right(notification_uuid::text, 1), '[' || environment || ']') FROM notifications
            ORDER BY 1
            """), ["1 [Sandbox]", "2 []"])
        // The new keys: the same ids in another environment are other rows; the FK follows the purchase.
        try pool.withConnection { c in
            try c.executeScript(unsafeSQL: """
                INSERT INTO transactions (project_id, transaction_id, original_transaction_id, product_id, type,
                    environment, bundle_id, purchase_date, signed_date, payload)
                VALUES ('\(project)', '2000', '1000', 'pro', 'Auto-Renewable Subscription', 'Xcode', 'com.example.old',
                        '2026-01-01Z', '2026-01-01Z', '{}');
                INSERT INTO purchases (project_id, original_transaction_id, latest_transaction_id, product_id, type,
                    environment, latest_signed_date)
                VALUES ('\(project)', '1000', '2000', 'pro', 'Auto-Renewable Subscription', 'Xcode', '2026-01-01Z');
                INSERT INTO subscriptions (project_id, user_id, environment, original_transaction_id)
                VALUES ('\(project)', 'alice', 'Xcode', '1000');
                """)
            XCTAssertThrowsError(try c.execute("""
                INSERT INTO subscriptions (project_id, user_id, environment, original_transaction_id)
                VALUES (\(UUID(uuidString: project) ?? UUID()), 'alice', 'LocalTesting', '1000')
                """)) { XCTAssertEqual(($0 as? PGError)?.sqlState, "23503") }
        }
    }

    /// 0097: the log rows pending at the upgrade move their purchase snapshots out of `data` (`old`, `new`) into
    /// `purchase_before` / `purchase_after`, field for field; the rest of `data` stays; a row without them gets none.
    func testPurchaseSnapshotMigrationMovesPendingRowsSnapshots() throws {
        try Migrator(pool: pool, migrations: Migration.embedded.filter { $0.version < 97 }).migrate()
        let project = UUID()
        try pool.withConnection { c in
            _ = try c.execute("""
                INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
                VALUES (\(project), 'Production', '1000', '{"old": {"latest_transaction_id": "1000",
                    "product_id": "pro", "type": "Auto-Renewable Subscription",
                    "expires_date": "2026-02-01T00:00:00+00:00", "is_in_billing_retry": false,
                    "eligible_win_back_offer_ids": ["wb1"]}, "new": {"latest_transaction_id": "2000",
                    "product_id": "pro", "type": "Auto-Renewable Subscription",
                    "expires_date": "2026-03-01T00:00:00+00:00", "revocation_type": "REFUND_FULL",
                    "auto_renew_status": 1}, "holders": ["alice"]}', now()),
                    (\(project), 'Production', '3000', '{"new": {"latest_transaction_id": "3000",
                    "product_id": "life", "type": "Non-Consumable"}, "bound": "bob"}', now()),
                    (\(project), 'Production', '4000', '{"tx": {"revenue": "all"}}', now())
                """)
        }
        XCTAssertEqual(try Migrator(pool: pool).migrate(), Migration.embedded.map(\.version).filter { $0 >= 97 })
        let lines = try pool.withConnection { c in
            _ = try c.execute("SET TIME ZONE 'UTC'")
            return try c.query("""
                SELECT original_transaction_id || ' ' || data::text || ' ' || COALESCE(purchase_before::text, '-')
                    || ' ' || COALESCE(purchase_after::text, '-') AS line
                FROM purchase_changes WHERE project_id = \(project) ORDER BY seq
                """).map { try $0.decode("line", as: String.self) }
        }
        XCTAssertEqual(lines, [
            #"1000 {"holders": ["alice"]} (1000,pro,"Auto-Renewable Subscription",,"2026-02-01 00:00:00+00",,,,,f,,,{wb1}) "#
                + #"(2000,pro,"Auto-Renewable Subscription",,"2026-03-01 00:00:00+00",,,REFUND_FULL,,,1,,)"#,
            #"3000 {"bound": "bob"} - (3000,life,Non-Consumable,,,,,,,,,,)"#,
            #"4000 {"tx": {"revenue": "all"}} - -"#,
        ])
    }

    /// 0098: a purchase with a revenue row of price 0 for a transaction without a price (the roll-up's loop before
    /// session 18 wrote one for every unpriced period without a free-trial offer), and one with a prorated refund (its
    /// row may lack it), are derived again whole: one log row for each, none for a purchase whose rows are right
    /// (priced, or a free trial of price 0); deriving them removes the row of price 0 and keeps the priced ones.
    func testUnpricedRevenueRowsMigrationDerivesTheirPurchasesAgain() throws {
        // 0098 changes no table: today's functions run on the schema before it.
        try Migrator(pool: pool, migrations: Migration.embedded.filter { $0.version < 98 },
                     functions: SchemaFunction.embedded).migrate()
        let project = try PostgresProjectStore(pool: pool).createProject(
            NewProject(ProjectSettings(name: "App", bundleId: "com.example.app")), publicKey: Fixtures.publicKey(1),
            secretKeyHash: Fixtures.hash(1), now: Fixtures.t0)
        let store = PostgresPurchaseStore(pool: pool)
        var unpriced = Fixtures.monthly("1000-1", original: "1000", start: 30)
        unpriced.payloadJSON = #"{"transactionId": "1000-1"}"#
        let priced = Fixtures.monthly("1000-0", original: "1000", start: 0, price: 9990)
        var trial = Fixtures.monthly("2000-0", original: "2000", start: 0)
        trial.offerDiscountType = .freeTrial
        trial.payloadJSON = #"{"transactionId": "2000-0", "offerDiscountType": "FREE_TRIAL"}"#
        var prorated = Fixtures.monthly("3000-0", original: "3000", start: 0)
        prorated.revocationDate = Fixtures.at(10)
        prorated.revocationType = .refundProrated
        prorated.revocationPercentage = 50000
        prorated.payloadJSON = #"{"transactionId": "3000-0", "price": 9990, "currency": "USD", "#
            + #""revocationType": "REFUND_PRORATED", "revocationPercentage": 50000}"#
        for t in [priced, unpriced, trial, prorated] {
            _ = try store.recordTransactions([t], source: .receipt, userId: "alice", deviceId: nil, project: project,
                                             now: Fixtures.at(0))
        }
        let derive = {
            while try PostgresWebhookStore(pool: self.pool).deriveChanges(projectId: project.id, limit: 50) > 0 {}
        }
        try derive()
        // The row the loop wrote for the unpriced period.
        try pool.withConnection { c in
            _ = try c.execute("""
                INSERT INTO revenue_transactions
                SELECT project_id, environment, transaction_id, original_transaction_id, product_id, type, NULL, '', 0,
                    false, true, purchase_date, expires_date, NULL, NULL, 0, 30, 2592000000, 0, expires_date, false
                FROM transactions WHERE project_id = \(project.id) AND transaction_id = '1000-1'
                """)
        }
        let rows = {
            try self.pool.withConnection { c in
                try c.query("""
                    SELECT transaction_id || ' ' || price_milli AS r FROM revenue_transactions
                    WHERE project_id = \(project.id) ORDER BY 1
                    """).map { try $0.decode("r", as: String.self) }
            }
        }
        XCTAssertEqual(try rows(), ["1000-0 9990", "1000-1 0", "2000-0 0", "3000-0 9990"])
        XCTAssertEqual(try Migrator(pool: pool).migrate(), Migration.embedded.map(\.version).filter { $0 >= 98 })
        let pending = try pool.withConnection { c in
            try c.query("""
                SELECT original_transaction_id || ' ' || data::text AS r FROM purchase_changes
                WHERE project_id = \(project.id) ORDER BY seq
                """).map { try $0.decode("r", as: String.self) }
        }
        XCTAssertEqual(pending, [#"1000 {"tx": {"revenue": "all"}}"#, #"3000 {"tx": {"revenue": "all"}}"#])
        try derive()
        XCTAssertEqual(try rows(), ["1000-0 9990", "2000-0 0", "3000-0 9990"])
    }
}
