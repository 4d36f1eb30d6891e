import Foundation
import Postgres

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

    /// Creates a migration.
    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
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
/// `schema_migrations(version, name, checksum, applied_at)`.
///
/// The whole run holds a session-level `pg_advisory_lock`, so several instances starting at once
/// apply each migration exactly once: the others wait, then find nothing pending. The checksum
/// (SHA-256 of the SQL, computed by the server) guards against edits to applied migrations.
public struct Migrator: Sendable {
    /// The advisory lock key (an arbitrary constant: "bouncer" in ASCII).
    public static let lockKey: Int64 = 0x626f_756e_6365_72

    private let pool: ConnectionPool
    private let migrations: [Migration]
    private let log: @Sendable (String) -> Void

    /// A migrator for `migrations` (default: `Migration.embedded`, every file of `schema/`).
    public init(pool: ConnectionPool, migrations: [Migration] = Migration.embedded,
                log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.pool = pool
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.log = log
    }

    /// Applies every pending migration and returns the versions applied by this call (empty when
    /// the schema was already current). Throws `MigrationError` for an edited applied migration, and
    /// `PGError` for database failures (the failing migration is rolled back; earlier ones stay).
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
            var done: [Int] = []
            for migration in migrations {
                let checksum = try Self.checksum(migration.sql, on: c)
                if let existing = applied[migration.version] {
                    guard existing.checksum == checksum else {
                        throw MigrationError(code: .checksumMismatch, version: migration.version,
                                             message: "\(migration.name) was edited after it was applied (recorded checksum \(existing.checksum.prefix(12))…, file \(checksum.prefix(12))…); add a new migration instead")
                    }
                    continue
                }
                try c.transaction { c in
                    try c.executeScript(unsafeSQL: migration.sql)
                    try c.execute("""
                        INSERT INTO schema_migrations (version, name, checksum)
                        VALUES (\(migration.version), \(migration.name), \(checksum))
                        """)
                }
                log("migrate: applied \(String(format: "%04d", migration.version))_\(migration.name)")
                done.append(migration.version)
            }
            let unknown = applied.keys.filter { v in !migrations.contains { $0.version == v } }.sorted()
            if !unknown.isEmpty {
                log("migrate: the database has migrations this binary does not know: \(unknown) (a newer version ran here)")
            }
            if done.isEmpty { log("migrate: schema is current (version \(migrations.last?.version ?? 0))") }
            return done
        }
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
