import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A private PostgreSQL cluster in a directory of its own, run with the server binaries installed
/// on the machine (`initdb`, `pg_ctl`, `postgres`): the "it just runs" database and the test harness.
///
/// Layout under `directory`: `data/` (PGDATA), `run/` (the Unix socket), `postgres.log`.
/// The cluster listens **only on a Unix socket** inside the cluster directory (no TCP:
/// `listen_addresses = ''`), so two clusters never fight over a port and nothing is exposed on the
/// network. Local connections use `trust` authentication; the directory is private to its owner.
///
/// `initdb` refuses to run as root, so when the process is root every server binary runs as the
/// `postgres` system user (`runuser -u postgres --`) and the cluster directory is owned by it.
public final class LocalCluster: Sendable {
    /// The cluster directory (absolute).
    public let directory: String
    /// PGDATA.
    public let dataDirectory: String
    /// The directory holding the server's Unix socket.
    public let socketDirectory: String
    /// The server log.
    public let logFile: String
    /// The socket's port number (names the socket file; no TCP listener).
    public let port: Int
    /// True when this call started the server; false when it reused a running one. Only a
    /// cluster this process started should be stopped at shutdown.
    public let startedByThisProcess: Bool
    /// Settings for the `postgres` superuser and database; use `settings.database(name)` for others.
    public let settings: ConnectionSettings

    private let tools: Tools
    private let log: @Sendable (String) -> Void

    /// Starts the cluster in `directory`, creating it with `initdb` first if needed, or reuses it if it
    /// is already running. Idempotent; a stale `postmaster.pid` (crashed server, reused PID) is removed.
    ///
    /// - Parameters:
    ///   - durable: keep PostgreSQL's crash-safe defaults (`fsync`, `synchronous_commit`,
    ///     `full_page_writes` on). Pass false only for throwaway test clusters.
    ///   - log: receives one line per action (created, started, reused).
    public static func startOrReuse(directory: String, durable: Bool = true, port: Int = 5432,
                                    log: @escaping @Sendable (String) -> Void = { _ in }) throws(PGError) -> LocalCluster {
        let tools = try Tools.find()
        let absolute = Self.absolutePath(directory)
        try Self.makeDirectories(absolute, tools: tools)
        // Serialise concurrent starters (several instances booting at once) with a file lock.
        let lockFD = open(absolute + "/.start.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockFD >= 0 else { throw PGError(code: .cluster, message: "cannot open \(absolute)/.start.lock: errno \(errno)") }
        defer { close(lockFD) }
        _ = flock(lockFD, LOCK_EX)

        let data = absolute + "/data"
        let socketDirectory = try Self.socketDirectory(for: absolute, port: port, tools: tools)
        let settings = ConnectionSettings(parameters: [
            ("host", socketDirectory), ("port", String(port)), ("user", "postgres"), ("dbname", "postgres"),
        ])
        if !FileManager.default.fileExists(atPath: data + "/PG_VERSION") {
            log("postgres: creating a new cluster in \(data) with \(tools.bin)/initdb")
            _ = try tools.run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"]
                + (durable ? [] : ["--no-sync"]))
            let conf = data + "/postgresql.conf"
            guard let handle = FileHandle(forWritingAtPath: conf) else {
                throw PGError(code: .cluster, message: "cannot append to \(conf)")
            }
            handle.seekToEndOfFile()
            handle.write(Data("\n# Bouncer's settings (socket, durability) are rewritten at every start:\ninclude_if_exists = 'bouncer.conf'\n".utf8))
            handle.closeFile()
        }
        try Self.writeSettings(data: data, socketDirectory: socketDirectory, port: port, durable: durable, tools: tools)

        let cluster = LocalCluster(directory: absolute, data: data, socketDirectory: socketDirectory, port: port,
                                   started: true, settings: settings, tools: tools, log: log)
        if let pid = Self.runningPostmaster(data: data) {
            if Self.waitUntilAccepting(settings, seconds: 30) {
                log("postgres: reusing the running cluster in \(data) (pid \(pid)), socket \(socketDirectory)")
                return LocalCluster(directory: absolute, data: data, socketDirectory: socketDirectory, port: port,
                                    started: false, settings: settings, tools: tools, log: log)
            }
            log("postgres: pid \(pid) holds \(data) but does not answer; restarting it")
            _ = try? tools.run("pg_ctl", ["stop", "-D", data, "-m", "immediate", "-w", "-t", "30", "-s"])
        } else {
            Self.removeStaleLockFiles(data: data, socketDirectory: socketDirectory, port: port, log: log)
        }
        try cluster.pgctlStart()
        log("postgres: started \(data) (\(durable ? "durable" : "fsync off, for tests")), socket \(socketDirectory), log \(cluster.logFile)")
        return cluster
    }

    private init(directory: String, data: String, socketDirectory: String, port: Int, started: Bool,
                 settings: ConnectionSettings, tools: Tools, log: @escaping @Sendable (String) -> Void) {
        self.directory = directory
        self.dataDirectory = data
        self.socketDirectory = socketDirectory
        self.logFile = directory + "/postgres.log"
        self.port = port
        self.startedByThisProcess = started
        self.settings = settings
        self.tools = tools
        self.log = log
    }

    /// Stops the server (`pg_ctl stop`). `immediate` skips the shutdown checkpoint (crash-like, for
    /// throwaway clusters); the default `fast` disconnects clients and shuts down cleanly.
    public func stop(immediate: Bool = false) throws(PGError) {
        _ = try tools.run("pg_ctl", ["stop", "-D", dataDirectory, "-m", immediate ? "immediate" : "fast", "-w", "-t", "60", "-s"])
        log("postgres: stopped \(dataDirectory)")
    }

    /// Restarts the server (`pg_ctl restart -m fast`): every open connection is terminated.
    public func restart() throws(PGError) {
        _ = try tools.run("pg_ctl", ["restart", "-D", dataDirectory, "-l", logFile, "-m", "fast", "-w", "-t", "60", "-s"])
        log("postgres: restarted \(dataDirectory)")
    }

    /// Creates a database owned by the superuser unless it exists. `name` must be a plain
    /// identifier (`[a-z0-9_]`, 1–63 characters) because it is spliced into DDL.
    public func createDatabase(_ name: String) throws(PGError) {
        try Self.validateIdentifier(name)
        let connection = try Connection(settings: settings)
        do {
            try connection.executeScript(unsafeSQL: "CREATE DATABASE \"\(name)\"")
            log("postgres: created database \(name)")
        } catch where error.sqlState == "42P04" {
            // duplicate_database: already there, which is what the caller wants.
        }
    }

    /// Drops a database if it exists, disconnecting its sessions (PostgreSQL 13+ `WITH (FORCE)`).
    public func dropDatabase(_ name: String) throws(PGError) {
        try Self.validateIdentifier(name)
        let connection = try Connection(settings: settings)
        try connection.executeScript(unsafeSQL: "DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
    }

    private static func validateIdentifier(_ name: String) throws(PGError) {
        let ok = !name.isEmpty && name.utf8.count <= 63
            && name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
        guard ok else { throw PGError(code: .invalidSettings, message: "database name must match [a-z0-9_]{1,63}") }
    }

    // MARK: - Start-up details

    private func pgctlStart() throws(PGError) {
        _ = try tools.run("pg_ctl", ["start", "-D", dataDirectory, "-l", logFile, "-w", "-t", "60", "-s"])
        guard Self.waitUntilAccepting(settings, seconds: 30) else {
            throw PGError(code: .cluster, message: "postgres started but does not accept connections; see \(logFile)")
        }
    }

    private static func absolutePath(_ path: String) -> String {
        let url = path.hasPrefix("/") ? URL(fileURLWithPath: path)
            : URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(path)
        return url.standardizedFileURL.path
    }

    /// Creates the cluster directory (0700; owned by `postgres` when we are root) and its parents
    /// (0755, so the `postgres` user can reach it).
    private static func makeDirectories(_ path: String, tools: Tools) throws(PGError) {
        let fm = FileManager.default
        let parent = (path as NSString).deletingLastPathComponent
        do {
            try fm.createDirectory(atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            if !fm.fileExists(atPath: path) {
                try fm.createDirectory(atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            }
        } catch {
            throw PGError(code: .cluster, message: "cannot create \(path): \(error)")
        }
        try tools.giveToServerUser(path)
    }

    /// `run/` inside the cluster, or a short directory under /tmp when that path would exceed the
    /// 107-byte `sun_path` limit of a Unix socket address.
    private static func socketDirectory(for directory: String, port: Int, tools: Tools) throws(PGError) -> String {
        var socketDirectory = directory + "/run"
        if (socketDirectory + "/.s.PGSQL.\(port)").utf8.count > 100 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in directory.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            socketDirectory = "/tmp/.bouncer-pg-\(String(hash, radix: 16))"
        }
        if !FileManager.default.fileExists(atPath: socketDirectory) {
            do {
                try FileManager.default.createDirectory(atPath: socketDirectory, withIntermediateDirectories: false,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw PGError(code: .cluster, message: "cannot create \(socketDirectory): \(error)")
            }
        }
        try tools.giveToServerUser(socketDirectory)
        return socketDirectory
    }

    private static func writeSettings(data: String, socketDirectory: String, port: Int, durable: Bool, tools: Tools) throws(PGError) {
        func quoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "''") + "'" }
        var lines = [
            "# Written by Bouncer's LocalCluster at every start; edit postgresql.conf for your own settings.",
            "listen_addresses = ''",
            "unix_socket_directories = \(quoted(socketDirectory))",
            "port = \(port)",
            "max_connections = 200",
        ]
        if !durable {
            lines += ["# Throwaway test cluster: speed over crash safety.",
                      "fsync = off", "synchronous_commit = off", "full_page_writes = off"]
        }
        let path = data + "/bouncer.conf"
        do {
            try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: false, encoding: .utf8)
        } catch {
            throw PGError(code: .cluster, message: "cannot write \(path): \(error)")
        }
        try tools.giveToServerUser(path)
    }

    /// The PID in `postmaster.pid` if that process is alive and is a PostgreSQL server.
    private static func runningPostmaster(data: String) -> Int32? {
        guard let text = try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8),
              let first = text.split(separator: "\n").first,
              let pid = Int32(first.trimmingCharacters(in: .whitespaces)), pid > 0 else { return nil }
        guard kill(pid, 0) == 0 || errno == EPERM else { return nil }
        // A PID reused by an unrelated process (common in containers) is not our server.
        let comm = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? ""
        guard comm.hasPrefix("postgres") || comm.hasPrefix("postmaster") else { return nil }
        // A killed postmaster lingers as a zombie until its parent reaps it: dead, not "alive but slow".
        return isZombie(pid) ? nil : pid
    }

    /// Whether `/proc/<pid>/stat` reports state `Z`. The state follows the parenthesised command name, which may
    /// itself contain spaces or parentheses, so it is read after the last ")".
    private static func isZombie(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    private static func removeStaleLockFiles(data: String, socketDirectory: String, port: Int, log: (String) -> Void) {
        let fm = FileManager.default
        let pidFile = data + "/postmaster.pid"
        if fm.fileExists(atPath: pidFile) {
            log("postgres: removing stale \(pidFile)")
            try? fm.removeItem(atPath: pidFile)
        }
        let socket = socketDirectory + "/.s.PGSQL.\(port)"
        try? fm.removeItem(atPath: socket + ".lock")
        try? fm.removeItem(atPath: socket)
    }

    private static func waitUntilAccepting(_ settings: ConnectionSettings, seconds: Int) -> Bool {
        let deadline = Date().addingTimeInterval(Double(seconds))
        var quick = settings
        quick.connectTimeoutSeconds = 2
        while Date() < deadline {
            if let connection = try? Connection(settings: quick), (try? connection.query("SELECT 1")) != nil {
                return true
            }
            usleep(100_000)
        }
        return false
    }
}

/// The PostgreSQL server binaries and how to run them (directly, or as `postgres` when root).
struct Tools: Sendable {
    let bin: String
    /// `runuser` when we are root, nil otherwise.
    let runuser: String?
    let serverUser: (uid: UInt32, gid: UInt32)?

    /// Newest `/usr/lib/postgresql/<version>/bin` with `initdb` and `pg_ctl`, else the directory of
    /// `pg_ctl` on PATH; `BOUNCER_PG_BIN` overrides both.
    static func find() throws(PGError) -> Tools {
        let fm = FileManager.default
        var candidates: [String] = []
        if let override = ProcessInfo.processInfo.environment["BOUNCER_PG_BIN"], !override.isEmpty {
            candidates.append(override)
        }
        let versions = ((try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .compactMap { name in Double(name).map { (name, $0) } }
            .sorted { $0.1 > $1.1 }
        candidates += versions.map { "/usr/lib/postgresql/\($0.0)/bin" }
        candidates += (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        guard let bin = candidates.first(where: {
            fm.isExecutableFile(atPath: $0 + "/initdb") && fm.isExecutableFile(atPath: $0 + "/pg_ctl")
        }) else {
            throw PGError(code: .cluster, message: "PostgreSQL server binaries (initdb, pg_ctl) not found in /usr/lib/postgresql/*/bin or PATH; install the postgresql package or set DATABASE_URL")
        }
        guard geteuid() == 0 else { return Tools(bin: bin, runuser: nil, serverUser: nil) }
        guard let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first(where: { fm.isExecutableFile(atPath: $0) }) else {
            throw PGError(code: .cluster, message: "running as root, and runuser is missing: cannot run initdb as the postgres user")
        }
        guard let entry = getpwnam("postgres") else {
            throw PGError(code: .cluster, message: "running as root, and there is no postgres system user to run the server as")
        }
        return Tools(bin: bin, runuser: runuser, serverUser: (entry.pointee.pw_uid, entry.pointee.pw_gid))
    }

    /// Makes `path` owned by the server user when we run it as `postgres`.
    func giveToServerUser(_ path: String) throws(PGError) {
        guard let serverUser else { return }
        guard chown(path, serverUser.uid, serverUser.gid) == 0 else {
            throw PGError(code: .cluster, message: "cannot chown \(path) to postgres: errno \(errno)")
        }
    }

    /// Runs a server tool to completion with `posix_spawn` + `waitpid` (Foundation's `Process`
    /// can miss the exit of a child whose grandchild, the server, keeps running). Output goes to a
    /// temporary file, never a pipe: the server started by `pg_ctl` must not hold a pipe we read.
    func run(_ tool: String, _ arguments: [String]) throws(PGError) -> String {
        let executable: String
        let argv: [String]
        if let runuser {
            executable = runuser
            argv = [runuser, "-u", "postgres", "--", bin + "/" + tool] + arguments
        } else {
            executable = bin + "/" + tool
            argv = [executable] + arguments
        }
        let outputPath = NSTemporaryDirectory() + "bouncer-pg-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).out"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var environment = ProcessInfo.processInfo.environment
        environment["LC_ALL"] = "C"
        environment.removeValue(forKey: "PGDATA")
        let envp = environment.map { "\($0.key)=\($0.value)" }

        let status = try Self.spawnAndWait(executable, argv: argv, envp: envp, outputPath: outputPath)
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw PGError(code: .cluster, message: "\(tool) \(arguments.joined(separator: " ")) exited \(status): \(text.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return text
    }

    /// Spawns `path` with stdin from /dev/null and stdout+stderr to `outputPath`; returns the exit
    /// status (128 + signal when killed by a signal).
    private static func spawnAndWait(_ path: String, argv: [String], envp: [String], outputPath: String) throws(PGError) -> Int32 {
        let cArgv = argv.map { strdup($0) }
        let cEnvp = envp.map { strdup($0) }
        // strdup'd strings are ours; freed after posix_spawn has copied them into the child.
        defer {
            cArgv.forEach { free($0) }
            cEnvp.forEach { free($0) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, cArgv + [nil], cEnvp + [nil])
        guard rc == 0 else {
            throw PGError(code: .cluster, message: "cannot run \(path): errno \(rc)")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw PGError(code: .cluster, message: "waitpid failed: errno \(errno)") }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}
