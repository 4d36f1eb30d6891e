public import Foundation
import Synchronization
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The real `bouncer serve` process on a port-0 socket, with its stderr kept in a file for failure messages and
/// assertions on its log.
public final class BouncerProcess: @unchecked Sendable {
    public let process: Process
    /// The exit status when `reapIfUnnoticed` reaped the server itself (Foundation's `Process` then never learns of
    /// the exit: `isRunning` stays true and `waitUntilExit` would never return).
    private var reapedStatus: Int32?
    public let port: Int
    /// The first stdout line, `listening on http://127.0.0.1:PORT\n` (`https://` with `BOUNCER_TLS_*`).
    public let listeningLine: String
    public let stderrPath: String
    public let environment: [String: String]
    /// The embedded cluster's directory this process made (removed after the server exits); nil when the caller chose.
    private let ownedDataDirectory: String?

    /// The admin token of `environment(databaseURL:overrides:)`.
    public static let adminToken = "e2e-admin-token-0123456789abcdef"

    /// Default test settings: this process's environment without any `BOUNCER_*`/`DATABASE_URL`, then port 0 on
    /// 127.0.0.1, access log off, the test PKI trusted, an admin token, a 3 s shutdown grace, no scheduled reconciliation. Pass `nil` values in
    /// `overrides` to remove a variable (e.g. `BOUNCER_ROOT_CERTIFICATES: nil` for the bundled Apple roots).
    /// Without `databaseURL` the server runs its embedded PostgreSQL (`BOUNCER_DATA_DIR` or its default).
    public static func environment(databaseURL: String? = nil, overrides: [String: String?] = [:]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in env.keys where key.hasPrefix("BOUNCER_") || key == "DATABASE_URL" { env[key] = nil }
        env["BOUNCER_PORT"] = "0"
        env["BOUNCER_HOST"] = "127.0.0.1"
        env["DATABASE_URL"] = databaseURL
        env["BOUNCER_ADMIN_TOKEN"] = adminToken
        env["BOUNCER_ROOT_CERTIFICATES"] = TestPaths.testRoot.path
        env["BOUNCER_ACCESS_LOG"] = "off"
        env["BOUNCER_SHUTDOWN_GRACE_SECONDS"] = "3"
        // No scheduled reconciliation unless a test asks for it: it would call Apple (or a fake) on its own clock.
        env["BOUNCER_RECONCILE_INTERVAL_SECONDS"] = "0"
        for (key, value) in overrides { env[key] = value }
        return env
    }

    /// Starts `bouncer serve` and waits (up to `timeout` seconds) for its `listening on http://HOST:PORT` line.
    public init(databaseURL: String? = nil, overrides: [String: String?] = [:], timeout: Double = 60) throws {
        var environment = Self.environment(databaseURL: databaseURL, overrides: overrides)
        // Embedded PostgreSQL in a directory of its own: never the working tree's `.bouncer`, which a developer's
        // running server (or another test) may hold locked.
        if databaseURL == nil, environment["BOUNCER_DATA_DIR"] == nil {
            let dir = NSTemporaryDirectory() + "bouncer-test-data-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            // As root the cluster runs as `postgres`, which must be able to enter the directory.
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o755])
            environment["BOUNCER_DATA_DIR"] = dir
            ownedDataDirectory = dir
        } else {
            ownedDataDirectory = nil
        }
        self.environment = environment
        stderrPath = NSTemporaryDirectory() + "bouncer-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).stderr"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        let p = Process()
        p.executableURL = try TestPaths.bouncerBinary()
        p.arguments = ["serve"]
        p.environment = environment
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle(forWritingAtPath: stderrPath)
        try p.run()
        process = p

        // Read stdout until the first line, with a deadline (poll, so a silent server cannot hang the suite).
        let fd = out.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(timeout)
        var bytes: [UInt8] = []
        var found: (Int, String)?
        while found == nil {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { break }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(min(remaining, 1) * 1000))
            if ready <= 0 { if !p.isRunning { break } else { continue } }
            var chunk = [UInt8](repeating: 0, count: 512)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
            if let newline = bytes.firstIndex(of: 10) {
                let line = String(decoding: bytes[0..<newline], as: UTF8.self)
                for prefix in ["listening on http://127.0.0.1:", "listening on https://127.0.0.1:"] {
                    if line.hasPrefix(prefix), let port = Int(line.dropFirst(prefix.count)) { found = (port, line + "\n") }
                }
                break
            }
        }
        guard let found else {
            if p.isRunning { kill(p.processIdentifier, SIGKILL) }
            p.waitUntilExit()
            let seen = String(decoding: bytes, as: UTF8.self)
            let errors = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
            throw HarnessFailure(description: "bouncer serve did not print its listening line within \(timeout) s; "
                + "stdout: \(seen.debugDescription); stderr:\n\(errors)")
        }
        (port, listeningLine) = found
    }

    /// What the server wrote to stderr so far (for failure messages and log assertions).
    public var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// A client for this server.
    public var client: RawHTTPClient { RawHTTPClient(port: port) }

    /// SIGTERM, then waits up to `timeout` seconds; returns the exit status (-2 after a signal, SIGKILL and -1 on
    /// a hang).
    @discardableResult
    public func stop(timeout: Double = 20) -> Int32 {
        if let reapedStatus { return reapedStatus }
        guard process.isRunning else { return process.terminationReason == .exit ? process.terminationStatus : -2 }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        var zombieSince: Date?
        while process.isRunning && Date() < deadline {
            if let status = reapIfUnnoticed(&zombieSince) { return status }
            usleep(20_000)
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            let killed = Date().addingTimeInterval(5)
            zombieSince = nil
            while process.isRunning && Date() < killed {
                if reapIfUnnoticed(&zombieSince) != nil { return -1 }
                usleep(20_000)
            }
            if process.isRunning { return -1 }
            process.waitUntilExit()
            return -1
        }
        process.waitUntilExit()
        return process.terminationReason == .exit ? process.terminationStatus : -2
    }

    /// Foundation's `Process` learns of an exit when its watch socket closes, and a process spawned by another
    /// thread at the same moment (a PostgreSQL started by another test) can inherit that socket and keep it open:
    /// the server has exited (a zombie) but `isRunning` stays true, and `waitUntilExit` would wait for the other
    /// process. A zombie for a second is reaped here: its exit status (-2 after a signal).
    private func reapIfUnnoticed(_ zombieSince: inout Date?) -> Int32? {
        let pid = process.processIdentifier
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")"),
              stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z") else {
            zombieSince = nil
            return nil
        }
        let since = zombieSince ?? Date()
        zombieSince = since
        guard Date().timeIntervalSince(since) >= 1 else { return nil }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        let exit = status & 0x7f == 0 ? (status >> 8) & 0xff : -2
        reapedStatus = exit
        return exit
    }

    /// Stops the server and asserts a clean exit (status 0 after SIGTERM).
    public func stopAndAssertCleanExit(file: StaticString = #filePath, line: UInt = #line) {
        let status = stop()
        XCTAssertEqual(status, 0, "bouncer serve exit status after SIGTERM; stderr:\n\(stderr)", file: file, line: line)
        try? FileManager.default.removeItem(atPath: stderrPath)
    }

    deinit {
        // Never `waitUntilExit` here: after `reapIfUnnoticed` reaped the server, `isRunning` stays true and that wait
        // never returned (a suite stuck after `testServeAnswersHealthAndDrainsOnSIGTERM`). A bounded wait instead.
        if reapedStatus == nil, process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            var zombieSince: Date?
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning, Date() < deadline, reapIfUnnoticed(&zombieSince) == nil { usleep(20_000) }
        }
        if let ownedDataDirectory { try? FileManager.default.removeItem(atPath: ownedDataDirectory) }
    }
}

/// Runs a `bouncer` subcommand (the CLI) to completion.
public struct CLIRun: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String

    /// Runs `bouncer arguments…` with exactly `environment`.
    public static func run(_ arguments: [String], environment: [String: String]) throws -> CLIRun {
        let r = try ProcessRun.run(try TestPaths.bouncerBinary(), arguments, environment: environment)
        return CLIRun(status: r.status, stdout: String(decoding: r.stdout, as: UTF8.self), stderr: r.stderr)
    }
}

/// Runs any program to completion, collecting both outputs.
///
/// With `posix_spawn` + `waitpid` and both outputs in files, not Foundation's `Process` + `Pipe`: `Process` learns of
/// an exit through a watch socket, and a PostgreSQL that another thread starts at the same moment can inherit that
/// socket and keep it open, so `waitUntilExit` waited forever for a program long gone (seen once: a suite stuck in
/// `BouncerExecutableE2ETests` with the test database's server holding the socket). Here nothing is inherited that
/// we wait on: the exit is the child's own status.
public enum ProcessRun {
    /// Runs `executable arguments…` (with `environment`, or this process's); stdout as bytes (a `pg_dump` may not be
    /// UTF-8), stderr as text. Standard input is /dev/null.
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws
        -> (status: Int32, stdout: Data, stderr: String)
    {
        let base = NSTemporaryDirectory() + "bouncer-run-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let outPath = base + ".out", errPath = base + ".err"
        defer { unlink(outPath); unlink(errPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([executable.path] + arguments).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        let envp = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") }
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = (argv + [nil]).withUnsafeBufferPointer { a in
            (envp + [nil]).withUnsafeBufferPointer { e in
                guard let av = a.baseAddress, let ev = e.baseAddress else { return EINVAL }
                return posix_spawn(&pid, executable.path, &actions, nil, UnsafeMutablePointer(mutating: av),
                                   UnsafeMutablePointer(mutating: ev))
            }
        }
        guard spawned == 0 else {
            throw TLSTestPKIError(message: "posix_spawn \(executable.path): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let out = FileManager.default.contents(atPath: outPath) ?? Data()
        let err = FileManager.default.contents(atPath: errPath) ?? Data()
        // WIFEXITED ? WEXITSTATUS : the signal as Process reported it (terminationStatus is the signal number).
        let code = status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
        return (code, out, String(decoding: err, as: UTF8.self))
    }
}
