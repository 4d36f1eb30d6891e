import Foundation
public import Postgres
import Synchronization
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A real Citus cluster for the scale-out tests: a coordinator and two workers, each a private PostgreSQL cluster
/// (`LocalCluster`: its own directory, run as `postgres` when we are root) with Citus preloaded and listening on a
/// loopback port of its own, so the nodes can reach each other over TCP as Citus requires.
///
/// One cluster per test process, started on first use and stopped at exit (like `TestDatabase`). Every
/// `bouncerDatabase(label:)` is a new database on every node with the extension and the nodes registered, then
/// migrated with `bouncer migrate` through the coordinator and distributed with `deploy/citus.sql`: the procedure of
/// deploy/citus.md, step by step.
///
/// Citus is a test dependency, not a product one: when `citus.so` is not installed next to the PostgreSQL server
/// binaries, `shared()` throws `CitusCluster.Unavailable` (tests turn it into a skip that says why), unless
/// `BOUNCER_CITUS=required` says this machine must have it (CI sets it once it has built Citus), when it is a failure.
public final class CitusCluster: Sendable {
    /// Why the cluster cannot run here (Citus not installed). A test skips with `reason`.
    public struct Unavailable: Error, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    /// The node Bouncer and the tests connect to.
    public let coordinator: LocalCluster
    /// The two nodes holding the shards of every database (`startExtraNode()` makes more, for one test).
    public var workers: [LocalCluster] { state.withLock { $0.workers } }
    /// The directory holding `psql` and the server binaries Citus was found with.
    public let bin: String

    private let root: String
    private let state: Mutex<State>

    private struct State {
        var workers: [LocalCluster]
        var extra: [LocalCluster]
    }

    /// Whether the scale-out tests must run (CI after building Citus) rather than skip.
    public static var required: Bool { ProcessInfo.processInfo.environment["BOUNCER_CITUS"] == "required" }

    /// The process-wide cluster, started on first use; throws `Unavailable` when Citus is not installed here (and not
    /// required).
    public static func shared() throws -> CitusCluster {
        try instance.withLock { slot -> CitusCluster in
            if let cluster = slot { return cluster }
            let cluster = try CitusCluster()
            slot = cluster
            atexit { CitusCluster.instance.withLock { $0 }?.stopAll() }
            return cluster
        }
    }

    private static let instance = Mutex<CitusCluster?>(nil)

    /// `shared()` for a test: `Unavailable` becomes an `XCTSkip` with the reason.
    public static func sharedOrSkip() throws -> CitusCluster {
        do {
            return try shared()
        } catch let unavailable as Unavailable {
            throw XCTSkip(unavailable.reason)
        }
    }

    /// The PostgreSQL bin directory whose `lib` holds `citus.so`, or the reason there is none.
    public static func locate() -> Result<String, Unavailable> {
        let fm = FileManager.default
        let versions = ((try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .compactMap { name in Double(name).map { (name, $0) } }
            .sorted { $0.1 > $1.1 }
        for (name, _) in versions {
            let base = "/usr/lib/postgresql/\(name)"
            if fm.fileExists(atPath: base + "/lib/citus.so"), fm.isExecutableFile(atPath: base + "/bin/initdb") {
                return .success(base + "/bin")
            }
        }
        return .failure(Unavailable(reason: "Citus is not installed (no citus.so in /usr/lib/postgresql/*/lib): the "
            + "scale-out tests need a local Citus 12+ (deploy/citus.md, \"Testing\"); skipped"))
    }

    private init() throws {
        let bin: String
        switch Self.locate() {
        case .success(let found): bin = found
        case .failure(let unavailable):
            if Self.required {
                throw HarnessFailure(description: "BOUNCER_CITUS=required, but \(unavailable.reason)")
            }
            throw unavailable
        }
        self.bin = bin
        root = NSTemporaryDirectory() + "bouncer-citus-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        coordinator = try Self.startNode(root + "/coordinator", bin: bin)
        state = Mutex(State(workers: [], extra: []))
        for index in 1...2 {
            let worker = try Self.startNode(root + "/worker\(index)", bin: bin)
            state.withLock { $0.workers.append(worker) }
        }
    }

    /// Starts one more node for a test of its own: in no database until `addNode(_:to:)` registers it there, and
    /// not among `workers` (later databases get the two workers only). Stopped with the cluster.
    public func startExtraNode() throws -> LocalCluster {
        let count = state.withLock { $0.extra.count }
        let node = try Self.startNode(root + "/extra\(count + 1)", bin: bin)
        state.withLock { $0.extra.append(node) }
        return node
    }

    /// A node: `LocalCluster` (Unix socket for us), then Citus' settings appended after its own include, so they
    /// win: a loopback TCP listener for the other nodes, Citus preloaded, logical decoding for moving shards under
    /// writes (PostgreSQL 15.20+ lists the plugins that may decode in `output_plugin_libraries`, a setting older
    /// servers lack: Citus' own for shard moves, `pgoutput` for copying reference tables to a new node).
    private static func startNode(_ directory: String, bin: String) throws -> LocalCluster {
        let port = try freeLoopbackPort()
        let node = try LocalCluster.startOrReuse(directory: directory, durable: false, port: port)
        let knowsPluginLibraries = (try? Connection(settings: node.settings).query(
            "SELECT 1 AS x FROM pg_settings WHERE name = 'output_plugin_libraries'").first) != nil
        var lines = [
            "", "# CitusCluster (tests): after bouncer.conf, so these win.",
            "listen_addresses = '127.0.0.1'",
            "shared_preload_libraries = 'citus'",
            "wal_level = logical",
            "max_worker_processes = 64",
            "max_replication_slots = 16",
            "max_wal_senders = 16",
        ]
        if knowsPluginLibraries { lines.append("output_plugin_libraries = 'citus, pgoutput'") }
        let conf = node.dataDirectory + "/postgresql.conf"
        guard let handle = FileHandle(forWritingAtPath: conf) else {
            throw HarnessFailure(description: "cannot append to \(conf)")
        }
        handle.seekToEndOfFile()
        handle.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        handle.closeFile()
        try node.restart()
        return node
    }

    /// A port nobody listens on now (bound and released; the node binds it a moment later).
    private static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessFailure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else { throw HarnessFailure(description: "bind 127.0.0.1:0: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A new database on every node with the extension, the coordinator and the workers registered in it (Citus'
    /// metadata is per database); returns the coordinator's settings for it.
    public func createDatabase(_ name: String) throws -> ConnectionSettings {
        do {
            return try createDatabaseOnNodes(name)
        } catch let error as PGError {
            throw HarnessFailure(description: "creating database \(name) on the Citus cluster: \(error.debugDescription)")
        }
    }

    private func createDatabaseOnNodes(_ name: String) throws -> ConnectionSettings {
        let nodes = [coordinator] + workers
        for node in nodes {
            try node.createDatabase(name)
            try Connection(settings: node.settings.database(name)).executeScript(unsafeSQL: "CREATE EXTENSION IF NOT EXISTS citus")
        }
        let settings = coordinator.settings.database(name)
        let connection = try Connection(settings: settings)
        _ = try connection.query("SELECT citus_set_coordinator_host('127.0.0.1', \(coordinator.port)::int)")
        for worker in workers { try addNode(worker, connection: connection) }
        return settings
    }

    /// Registers `worker` in database `name` (created there, with the extension, first).
    public func addNode(_ worker: LocalCluster, to name: String) throws {
        try worker.createDatabase(name)
        try Connection(settings: worker.settings.database(name)).executeScript(unsafeSQL: "CREATE EXTENSION IF NOT EXISTS citus")
        try addNode(worker, connection: Connection(settings: coordinator.settings.database(name)))
    }

    private func addNode(_ worker: LocalCluster, connection: Connection) throws {
        _ = try connection.query("SELECT citus_add_node('127.0.0.1', \(worker.port)::int)")
    }

    /// The `DATABASE_URL` Bouncer takes for database `name` on the coordinator.
    public func url(database name: String) -> String {
        "postgresql:///\(name)?host=\(coordinator.socketDirectory)&port=\(coordinator.port)&user=postgres"
    }

    /// Runs `deploy/citus.sql` on database `name` the documented way (`psql -v ON_ERROR_STOP=1 --single-transaction`);
    /// returns psql's output, throws with it on failure.
    /// `shardCount` sets `citus.shard_count` for the run (deploy/citus.sql's own default is Citus' 32).
    @discardableResult
    public func distribute(database name: String, shardCount: Int? = nil) throws -> String {
        let script = TestPaths.repoRoot.appendingPathComponent("deploy/citus.sql").path
        let run = try ProcessRun.run(URL(fileURLWithPath: bin + "/psql"), [
            "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction", "-f", script,
            "-h", coordinator.socketDirectory, "-p", String(coordinator.port), "-U", "postgres", "-d", name,
        ], environment: shardCount.map { count in
            ProcessInfo.processInfo.environment.merging(["PGOPTIONS": "-c citus.shard_count=\(count)"]) { $1 }
        })
        let output = String(decoding: run.stdout, as: UTF8.self) + run.stderr
        guard run.status == 0 else { throw HarnessFailure(description: "psql -f deploy/citus.sql exited \(run.status): \(output)") }
        return output
    }

    /// A database on the cluster as Bouncer runs on it: created on every node, `bouncer migrate` through the
    /// coordinator, then `deploy/citus.sql`. Returns its name.
    public func bouncerDatabase(label: String, shardCount: Int? = nil) throws -> String {
        let cleaned = String(label.lowercased().unicodeScalars
            .filter { ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "_" }.map(Character.init).prefix(30))
        let name = "citus_\(cleaned)_\(UInt32.random(in: 0...UInt32.max))"
        _ = try createDatabase(name)
        var environment = ProcessInfo.processInfo.environment
        for key in environment.keys where key.hasPrefix("BOUNCER_") || key == "DATABASE_URL" { environment[key] = nil }
        environment["DATABASE_URL"] = url(database: name)
        let migrate = try CLIRun.run(["migrate"], environment: environment)
        guard migrate.status == 0 else {
            throw HarnessFailure(description: "bouncer migrate on Citus exited \(migrate.status): \(migrate.stderr)")
        }
        try distribute(database: name, shardCount: shardCount)
        return name
    }

    private func stopAll() {
        let nodes = [coordinator] + state.withLock { $0.workers + $0.extra }
        for node in nodes { try? node.stop(immediate: true) }
        for node in nodes { try? FileManager.default.removeItem(atPath: node.socketDirectory) }
        try? FileManager.default.removeItem(atPath: root)
    }
}
