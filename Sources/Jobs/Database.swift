import Foundation
import Glibc
import JSON
public import Postgres
import Storage

/// Where Bouncer's PostgreSQL is and how many connections to keep.
public struct DatabaseSettings: Sendable {
    /// `DATABASE_URL`; nil = start (or reuse) an embedded cluster.
    public var url: String?
    /// `BOUNCER_DATA_DIR`: the embedded cluster lives in `<dir>/postgres`.
    public var dataDirectory = ".bouncer"
    /// `BOUNCER_DB_POOL_SIZE`.
    public var poolSize = 16
    /// `BOUNCER_DB_ACQUIRE_TIMEOUT_SECONDS`.
    public var acquireTimeout: Duration = .seconds(2)
    /// `BOUNCER_DB_STATEMENT_TIMEOUT_SECONDS`.
    public var statementTimeout: Duration = .seconds(10)
    /// `BOUNCER_RECEIPT_BATCH_MAX`: most receipts committed together (1 = each its own commit).
    public var receiptBatchMax = 32
    /// `BOUNCER_RECEIPT_BATCHES`: most group-commit batches written at once, each on its own connection (`serve`
    /// defaults it to half the available CPUs, 1…8: `ServeSettings.defaultReceiptBatches`).
    public var receiptBatches = 1

    /// The defaults.
    public init() {}
}

/// An open database: the pool, migrations applied, and the embedded cluster if this process started one.
public final class Database: Sendable {
    /// The serving pool.
    public let pool: ConnectionPool
    private let cluster: LocalCluster?

    private init(pool: ConnectionPool, cluster: LocalCluster?) {
        self.pool = pool
        self.cluster = cluster
    }

    /// Connects (starting the embedded cluster when no URL is given) and applies pending migrations under an
    /// advisory lock, so several instances starting together never race.
    public static func open(_ settings: DatabaseSettings, log: @escaping @Sendable (String) -> Void) throws -> Database {
        let connection: ConnectionSettings
        var cluster: LocalCluster?
        if let url = settings.url {
            connection = try ConnectionSettings(url: url)
        } else {
            let started = try LocalCluster.startOrReuse(
                directory: settings.dataDirectory + "/postgres", durable: true, log: { log(jsonLine("database", $0)) })
            try started.createDatabase("bouncer")  // idempotent
            connection = started.settings.database("bouncer")
            cluster = started.startedByThisProcess ? started : nil
        }
        var configuration = ConnectionPool.Configuration()
        configuration.size = settings.poolSize
        configuration.acquireTimeout = settings.acquireTimeout
        configuration.statementTimeout = settings.statementTimeout
        // Migrations get their own single connection without the serving statement timeout: a migration on a
        // large table may legitimately run for minutes.
        var migrationConfiguration = ConnectionPool.Configuration()
        migrationConfiguration.size = 1
        migrationConfiguration.statementTimeout = nil
        let migrationPool = ConnectionPool(settings: connection, configuration: migrationConfiguration)
        defer { migrationPool.shutdown() }
        do {
            let applied = try Migrator(pool: migrationPool).migrate()
            log(jsonLine("migrations", applied.isEmpty ? "schema up to date" : "applied \(applied)"))
        } catch {
            try? cluster?.stop()
            throw error
        }
        return Database(pool: ConnectionPool(settings: connection, configuration: configuration), cluster: cluster)
    }

    /// Closes the pool, then stops the embedded cluster if this process started it.
    public func close(log: @Sendable (String) -> Void) {
        pool.shutdown()
        if let cluster {
            do {
                try cluster.stop()
                log(jsonLine("database", "stopped the embedded PostgreSQL"))
            } catch {
                log(jsonLine("database", "could not stop the embedded PostgreSQL: \(error)"))
            }
        }
    }
}

/// One structured log line: `{"event": …, "message": …}`.
public func jsonLine(_ event: String, _ message: String) -> String {
    JSONValue.object(JSONObject([("event", .string(event)), ("message", .string(message))])).serializedString()
}

/// This process among the instances: `host/pid`, in `reconcile_runs.instance` and webhook leases.
public enum ProcessIdentity {
    /// This process: host name and pid.
    public static var instance: String {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count - 1) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        return "\(host)/\(getpid())"
    }
}
