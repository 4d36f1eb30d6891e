import Foundation
import Glibc
import XCTest

/// A failure of the harness itself (binary missing, server never listened), with what it saw.
struct HarnessFailure: Error, CustomStringConvertible {
    let description: String
}

/// Repository-relative paths (repo root = three levels up from this file's folder's parent).
enum E2EPaths {
    static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let pki = repoRoot.appendingPathComponent("Tests/Fixtures/pki")
    static let signJWS = pki.appendingPathComponent("sign-jws")
    static let testRoot = pki.appendingPathComponent("root.pem")
    /// A complete chain (root, intermediate, leaf) under a root the server does not trust.
    static let untrustedCerts = repoRoot.appendingPathComponent("Tests/AppStoreJWSTests/Fixtures/certs")
    static let vectors = repoRoot.deletingLastPathComponent().appendingPathComponent("shared/test-vectors")

    /// `.build/<config>/bouncer`, next to the test bundle.
    static func bouncerBinary() throws -> URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        if dir.lastPathComponent.hasSuffix(".xctest") { dir = dir.deletingLastPathComponent() }
        var candidates = [dir, Bundle.main.bundleURL.deletingLastPathComponent()]
        candidates.append(repoRoot.appendingPathComponent(".build/debug"))
        for candidate in candidates {
            let url = candidate.appendingPathComponent("bouncer")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw HarnessFailure(description: "bouncer binary not found next to the test bundle (\(dir.path)) or in "
            + ".build/debug: run `swift build --build-tests` first")
    }
}

/// The real `bouncer serve` process on a port-0 socket, with its stderr kept in a file for failure messages.
final class BouncerProcess: @unchecked Sendable {
    let process: Process
    let port: Int
    let stderrPath: String
    let environment: [String: String]

    /// Default test settings: access log off, the test PKI trusted, an admin token. Pass `nil` values in
    /// `overrides` to remove a variable (e.g. `BOUNCER_ROOT_CERTIFICATES: nil` for the bundled Apple roots).
    static func environment(databaseURL: String, overrides: [String: String?] = [:]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in env.keys where key.hasPrefix("BOUNCER_") || key == "DATABASE_URL" { env[key] = nil }
        env["BOUNCER_PORT"] = "0"
        env["BOUNCER_HOST"] = "127.0.0.1"
        env["DATABASE_URL"] = databaseURL
        env["BOUNCER_ADMIN_TOKEN"] = E2E.adminToken
        env["BOUNCER_ROOT_CERTIFICATES"] = E2EPaths.testRoot.path
        env["BOUNCER_ACCESS_LOG"] = "off"
        env["BOUNCER_SHUTDOWN_GRACE_SECONDS"] = "3"
        for (key, value) in overrides { env[key] = value }
        return env
    }

    /// Starts `bouncer serve` and waits (up to `timeout` seconds) for its `listening on http://HOST:PORT` line.
    init(databaseURL: String, overrides: [String: String?] = [:], timeout: Double = 60) throws {
        environment = Self.environment(databaseURL: databaseURL, overrides: overrides)
        stderrPath = NSTemporaryDirectory() + "bouncer-e2e-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).stderr"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        let p = Process()
        p.executableURL = try E2EPaths.bouncerBinary()
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
        var found: Int?
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
                let prefix = "listening on http://127.0.0.1:"
                if line.hasPrefix(prefix), let port = Int(line.dropFirst(prefix.count)) { found = port }
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
        port = found
    }

    /// What the server wrote to stderr so far (for failure messages).
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// A client for this server.
    var client: HTTPClient { HTTPClient(port: port) }

    /// SIGTERM, then waits up to `timeout` seconds; returns the exit status (SIGKILL and -1 on a hang).
    @discardableResult
    func stop(timeout: Double = 20) -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return -1
        }
        process.waitUntilExit()
        return process.terminationReason == .exit ? process.terminationStatus : -2
    }

    /// Stops the server and asserts a clean exit (status 0 after SIGTERM).
    func stopAndAssertCleanExit(file: StaticString = #filePath, line: UInt = #line) {
        let status = stop()
        XCTAssertEqual(status, 0, "bouncer serve exit status after SIGTERM; stderr:\n\(stderr)", file: file, line: line)
        try? FileManager.default.removeItem(atPath: stderrPath)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// Runs a `bouncer` subcommand (the CLI) to completion.
struct CLIRun {
    var status: Int32
    var stdout: String
    var stderr: String

    static func run(_ arguments: [String], environment: [String: String]) throws -> CLIRun {
        let p = Process()
        p.executableURL = try E2EPaths.bouncerBinary()
        p.arguments = arguments
        p.environment = environment
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // Drain stderr on another thread so a chatty process never blocks on a full pipe.
        let errData = LockedData()
        let errThread = Thread { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
        errThread.start()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        while !errData.isSet { usleep(1000) }
        return CLIRun(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
                      stderr: String(decoding: errData.value, as: UTF8.self))
    }
}

/// A value set once by another thread.
final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data: Data?
    func set(_ d: Data) { lock.lock(); data = d; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return data != nil }
    var value: Data { lock.lock(); defer { lock.unlock() }; return data ?? Data() }
}
