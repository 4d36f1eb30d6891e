import Foundation
public import Postgres

/// One forward-only schema migration: `schema/NNNN_name.sql`.
///
/// `Migration.embedded` holds every file of `schema/`, compiled into the binary at build time by the
/// EmbedSchema build-tool plugin (`schema/EmbedSchema`), so the binary never reads the source tree and
/// `schema/` is the only copy of the SQL.
public struct Migration: Sendable, Equatable {
    /// The number in the file name (`0001` → 1); applied in ascending order.
    public let version: Int
    /// The rest of the file name, without `.sql`.
    public let name: String
    /// The file's SQL, run with the simple query protocol (several statements allowed; no BEGIN/COMMIT:
    /// the migrator wraps each migration in its own transaction).
    public let sql: String

    /// For a released migration rewritten to drop dead function bodies, the checksum of its released text, from its
    /// first line (`-- released-sha256: <hex>`): the one recorded and compared for it, so databases that applied the
    /// released text and binaries that carry it agree with this one. `MigrationTests` pins each rewritten text.
    public var releasedChecksum: String? {
        let prefix = "-- released-sha256: "
        guard sql.hasPrefix(prefix) else { return nil }
        let hex = sql.dropFirst(prefix.count).prefix { $0 != "\n" }
        return hex.count == 64 && hex.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) ? String(hex) : nil
    }
}

/// One function of the schema: `schema/functions/NAME.sql`, the one place its current definition lives.
///
/// The file holds `CREATE OR REPLACE FUNCTION NAME …` (the function, or the function and its overloads) and nothing
/// else. Unlike a migration it is code, not history: the migrator re-applies it whenever its text differs from the
/// one recorded in `schema_functions`, so the database runs the definitions of the binary that migrated it last.
/// `SchemaFunction.embedded` holds every file, compiled in by the EmbedSchema plugin like the migrations.
public struct SchemaFunction: Sendable, Equatable {
    /// The function's name, and the file's (`bouncer_purchase_status` for `functions/bouncer_purchase_status.sql`).
    public let name: String
    /// The file's SQL, run with the simple query protocol.
    public let sql: String
}

/// Why migrating stopped.
public struct MigrationError: Error, Sendable, CustomStringConvertible {
    /// A stable category.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// An already-applied migration's SQL differs from the recorded checksum (someone edited a
        /// released file: add a new migration instead).
        public static let checksumMismatch = Code("checksumMismatch")
        /// Two embedded migrations share a version number.
        public static let duplicateVersion = Code("duplicateVersion")
        /// The stable name.
        public var description: String { name }
    }

    /// What went wrong.
    public let code: Code
    /// The migration's version.
    public let version: Int
    /// A human-readable explanation.
    public let message: String

    /// `checksumMismatch: migration 1 (init): …`.
    public var description: String { "\(code): migration \(version): \(message)" }
}

/// Applies pending migrations in version order, each in its own transaction, recorded in
/// `schema_migrations(version, name, checksum, applied_at)`; and the schema's functions (`SchemaFunction`), recorded
/// in `schema_functions(name, checksum, applied_at)`, in the transaction of the run's last migration, so a new schema
/// and its functions commit together.
///
/// The whole run holds a session-level `pg_advisory_lock`, so several instances starting at once
/// apply each migration exactly once: the others wait, then find nothing pending. The checksum
/// (SHA-256 of the SQL, computed by the server) guards against edits to applied migrations, and tells which
/// functions changed.
///
/// Functions are re-applied when their file's checksum differs from the recorded one, and all of them after a run
/// that applied a migration (a migration may have replaced or dropped one). They are skipped when the database
/// has migrations this binary does not know: a newer binary's definitions may use what those migrations added.
/// Among binaries of the same migrations, the last to start wins; a rollout converges on the new definitions, a
/// rollback restores the old ones (functions follow the binary, tables only move forward).
public struct Migrator: Sendable {
    /// The advisory lock key (an arbitrary constant: "bouncer" in ASCII).
    public static let lockKey: Int64 = 0x626f_756e_6365_72

    private let pool: ConnectionPool
    private let migrations: [Migration]
    private let functions: [SchemaFunction]
    private let log: @Sendable (String) -> Void
    /// Whether a migration goes statement by statement (`SQLScript`); nil: on a Citus coordinator only. A test sets it
    /// to run that path on one node.
    var statementByStatement: Bool?

    /// A migrator for the schema this binary carries: every migration and every function of `schema/`.
    public init(pool: ConnectionPool, log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.init(pool: pool, migrations: Migration.embedded, functions: SchemaFunction.embedded, log: log)
    }

    /// A migrator for `migrations` and `functions`. No functions by default: the function files are written against
    /// the latest schema, so a migrator of older migrations (a test of an upgrade) must not apply them.
    public init(pool: ConnectionPool, migrations: [Migration], functions: [SchemaFunction] = [],
                log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.pool = pool
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.functions = functions.sorted { $0.name < $1.name }
        self.log = log
    }

    /// Applies every pending migration, and the functions (all of them in the last migration's transaction; only the
    /// changed ones, in their own, when no migration was pending), and returns the versions applied by this call
    /// (empty when the schema was already current). Throws `MigrationError` for an edited applied migration, and
    /// `PGError` for database failures (the failing migration is rolled back, earlier ones stay; a failing function
    /// rolls back every function of the run, and the last migration with them).
    @discardableResult
    public func migrate() throws -> [Int] {
        var seen = Set<Int>()
        for m in migrations where !seen.insert(m.version).inserted {
            throw MigrationError(code: .duplicateVersion, version: m.version, message: "version used twice")
        }
        return try pool.withConnection { c in
            try c.execute("SELECT pg_advisory_lock(\(Self.lockKey))")
            defer { _ = try? c.execute("SELECT pg_advisory_unlock(\(Self.lockKey))") }
            try c.executeScript(unsafeSQL: """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version    int         PRIMARY KEY,
                    name       text        NOT NULL,
                    checksum   text        NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            var applied: [Int: (name: String, checksum: String)] = [:]
            for row in try c.query("SELECT version, name, checksum FROM schema_migrations") {
                applied[try row.decode("version", as: Int.self)] =
                    (try row.decode("name", as: String.self), try row.decode("checksum", as: String.self))
            }
            let unknown = applied.keys.filter { v in !migrations.contains { $0.version == v } }.sorted()
            if !unknown.isEmpty {
                log("migrate: the database has migrations this binary does not know: \(unknown) (a newer version ran here)")
            }
            var pending: [(migration: Migration, checksum: String)] = []
            for migration in migrations {
                let checksum = try migration.releasedChecksum ?? Self.checksum(migration.sql, on: c)
                if let existing = applied[migration.version] {
                    guard existing.checksum == checksum else {
                        throw MigrationError(code: .checksumMismatch, version: migration.version,
                                             message: "\(migration.name) was edited after it was applied (recorded checksum \(existing.checksum.prefix(12))…, file \(checksum.prefix(12))…); add a new migration instead")
                    }
                    continue
                }
                pending.append((migration, checksum))
            }
            let withFunctions = unknown.isEmpty && !functions.isEmpty
            if withFunctions {
                try c.executeScript(unsafeSQL: """
                    CREATE TABLE IF NOT EXISTS schema_functions (
                        name       text        PRIMARY KEY,
                        checksum   text        NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now()
                    )
                    """)
            } else if !functions.isEmpty {
                log("migrate: functions left as the newer version defined them")
            }
            // On a Citus coordinator (deploy/citus.md, "Upgrading"), every transaction of the run reaches the shards
            // over one connection per node: a migration's DDL on a distributed table otherwise runs in parallel over
            // several, after which Citus refuses the same transaction's function commands ("cannot run function
            // command because there was a parallel operation on a distributed table in the transaction"). And a
            // migration goes statement by statement there (SQLScript says why).
            let onCitus = try PostgresStore.hasCitus(c)
            let sequential = { (c: Connection) throws in
                if onCitus { try c.executeScript(unsafeSQL: "SET LOCAL citus.multi_shard_modify_mode TO 'sequential'") }
            }
            var done: [Int] = []
            for (index, (migration, checksum)) in pending.enumerated() {
                var replaced: [String] = []
                try c.transaction { c in
                    try sequential(c)
                    if statementByStatement ?? onCitus {
                        for statement in SQLScript.statements(migration.sql) { try c.executeScript(unsafeSQL: statement) }
                    } else {
                        try c.executeScript(unsafeSQL: migration.sql)
                    }
                    try c.execute("""
                        INSERT INTO schema_migrations (version, name, checksum)
                        VALUES (\(migration.version), \(migration.name), \(checksum))
                        """)
                    // The run's last migration commits together with every function: its schema never runs with the
                    // previous definitions, nor a new trigger with the placeholder its migration declared.
                    if withFunctions && index == pending.count - 1 { replaced = try applyFunctions(all: true, on: c) }
                }
                log("migrate: applied \(String(format: "%04d", migration.version))_\(migration.name)")
                if !replaced.isEmpty { log("migrate: applied functions \(replaced.joined(separator: ", "))") }
                done.append(migration.version)
            }
            if done.isEmpty {
                log("migrate: schema is current (version \(migrations.last?.version ?? 0))")
                if withFunctions {
                    let replaced = try c.transaction { c in
                        try sequential(c)
                        return try applyFunctions(all: false, on: c)
                    }
                    if !replaced.isEmpty { log("migrate: applied functions \(replaced.joined(separator: ", "))") }
                }
            }
            return done
        }
    }

    /// Applies the functions whose checksum differs from the recorded one (`all`: every function) in the caller's
    /// transaction, and returns their names: first with `check_function_bodies` off, so the files need no dependency
    /// order (an SQL function's body names functions that may come later), then again with it on, so every body is
    /// still checked.
    private func applyFunctions(all: Bool, on c: Connection) throws -> [String] {
        var recorded: [String: String] = [:]
        for row in try c.query("SELECT name, checksum FROM schema_functions") {
            recorded[try row.decode("name", as: String.self)] = try row.decode("checksum", as: String.self)
        }
        var changed: [(function: SchemaFunction, checksum: String)] = []
        for function in functions {
            let checksum = try Self.checksum(function.sql, on: c)
            if all || recorded[function.name] != checksum { changed.append((function, checksum)) }
        }
        guard !changed.isEmpty else { return [] }
        try c.executeScript(unsafeSQL: "SET LOCAL check_function_bodies = off")
        for (function, _) in changed { try c.executeScript(unsafeSQL: function.sql) }
        try c.executeScript(unsafeSQL: "SET LOCAL check_function_bodies = on")
        for (function, checksum) in changed {
            try c.executeScript(unsafeSQL: function.sql)
            try c.execute("""
                INSERT INTO schema_functions AS f (name, checksum) VALUES (\(function.name), \(checksum))
                ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()
                """)
        }
        return changed.map(\.function.name)
    }

    /// The versions recorded as applied, ascending.
    public func appliedVersions() throws -> [Int] {
        try pool.withConnection { c in
            let exists = try c.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")[0].decode("present", as: Bool.self)
            guard exists else { return [] }
            return try c.query("SELECT version FROM schema_migrations ORDER BY version").map { try $0.decode("version", as: Int.self) }
        }
    }

    /// Hex SHA-256 of the SQL text's UTF-8 bytes (equal to `sha256sum schema/NNNN_name.sql`), computed by
    /// PostgreSQL (11+) so Storage needs no crypto code.
    private static func checksum(_ sql: String, on c: Connection) throws -> String {
        try c.query("SELECT encode(sha256(convert_to(\(sql), 'UTF8')), 'hex') AS sum")[0].decode("sum", as: String.self)
    }
}
