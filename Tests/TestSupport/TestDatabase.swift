import Foundation
public import Postgres
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Throwaway PostgreSQL for DB-backed tests.
///
/// The first call starts one private cluster for the whole test process (fsync off) under a fresh
/// temporary directory, through the same `LocalCluster` code path `bouncer serve` uses; every
/// `TestDatabase.create()` then makes a new, empty database in it, so test cases and targets never
/// see each other's rows. At process exit the cluster is stopped and its directory removed.
///
/// ```swift
/// let settings = try TestDatabase.create()
/// let pool = ConnectionPool(settings: settings)
/// defer { pool.shutdown() }
/// ```
/// Set `BOUNCER_TEST_DATABASE_URL` to run against an existing server instead (each test still gets
/// its own database, created through that URL's user, which needs CREATEDB).
public enum TestDatabase {
    /// The process-wide cluster, started on first use.
    public static func cluster() throws -> LocalCluster {
        try shared.withLock { state -> LocalCluster in
            if let cluster = state.cluster { return cluster }
            let directory = NSTemporaryDirectory() + "bouncer-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))/pg"
            let quiet = ProcessInfo.processInfo.environment["BOUNCER_TEST_VERBOSE"] == nil
            let cluster = try LocalCluster.startOrReuse(directory: directory, durable: false) { line in
                if !quiet { FileHandle.standardError.write(Data((line + "\n").utf8)) }
            }
            state.cluster = cluster
            atexit {
                // Runs after XCTest finishes; the cluster would otherwise outlive the test process.
                if let cluster = TestDatabase.shared.withLock({ $0.cluster }) {
                    try? cluster.stop(immediate: true)
                    try? FileManager.default.removeItem(atPath: (cluster.directory as NSString).deletingLastPathComponent)
                    try? FileManager.default.removeItem(atPath: cluster.socketDirectory)
                }
            }
            return cluster
        }
    }

    /// Creates a fresh, empty database and returns settings that connect to it. `label` becomes part of
    /// the database name (lowercased letters, digits and `_` only), to help when reading server logs.
    public static func create(label: String = "t") throws -> ConnectionSettings {
        let cleaned = String(label.lowercased().unicodeScalars.filter { ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") }
            .map(Character.init).prefix(30))
        let number = shared.withLock { state -> Int in
            state.counter += 1
            return state.counter
        }
        let name = "\(cleaned.isEmpty ? "t" : cleaned)_\(number)_\(UInt32.random(in: 0...UInt32.max))"
        if let url = ProcessInfo.processInfo.environment["BOUNCER_TEST_DATABASE_URL"], !url.isEmpty {
            let base = try ConnectionSettings(url: url)
            let connection = try Connection(settings: base)
            try connection.executeScript(unsafeSQL: "CREATE DATABASE \"\(name)\"")
            return base.database(name)
        }
        let cluster = try cluster()
        try cluster.createDatabase(name)
        return cluster.settings.database(name)
    }

    private struct State: ~Copyable {
        var cluster: LocalCluster?
        var counter = 0
    }

    private static let shared = Mutex(State())
}
