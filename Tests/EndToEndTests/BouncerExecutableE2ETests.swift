import Foundation
import Glibc
import XCTest

/// Runs the built `bouncer` binary as a real process: CLI contract, `serve`, SIGTERM drain.
final class BouncerExecutableE2ETests: XCTestCase {
    /// `bouncer arguments…` with this process's environment plus `environment`.
    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> CLIRun {
        try CLIRun.run(arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
    }

    func testServeAnswersHealthAndDrainsOnSIGTERM() throws {
        let p = try BouncerProcess(overrides: ["BOUNCER_ACCESS_LOG": nil])
        let line = p.listeningLine
        XCTAssertTrue(line.hasPrefix("listening on http://127.0.0.1:"), line)
        XCTAssertTrue(line.hasSuffix("\n"))
        let port = p.port

        let c = try TestClient(port: port)
        try c.send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        let health = try c.readResponse()
        XCTAssertEqual(health.status, 200)
        XCTAssertEqual(health.text, #"{"status":"ok"}"#)
        try c.send("GET /readyz HTTP/1.1\r\nHost: t\r\nX-Request-Id: exe-1\r\n\r\n")
        let ready = try c.readResponse()
        XCTAssertEqual(ready.status, 200)
        XCTAssertEqual(ready.text, #"{"status":"ready"}"#)

        XCTAssertEqual(p.stop(), 0, "exit status after SIGTERM")
        let logs = p.stderr
        XCTAssertTrue(logs.contains(#""path":"/readyz","status":200"#), logs)
        XCTAssertTrue(logs.contains(#""request_id":"exe-1""#), logs)
    }

    func testInvalidEnvironmentReportsEveryProblemAndExits2() throws {
        let r = try run(["serve"], environment: ["BOUNCER_PORT": "http", "BOUNCER_WORKERS": "0", "BOUNCER_ACCESS_LOG": "maybe"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("BOUNCER_PORT"), r.stderr)
        XCTAssertTrue(r.stderr.contains("BOUNCER_WORKERS"), r.stderr)
        XCTAssertTrue(r.stderr.contains("BOUNCER_ACCESS_LOG"), r.stderr)
        XCTAssertEqual(r.stdout, "")
    }

    /// Every example admin token the repository shows a reader (README, `deploy/.env.example`, the k8s example).
    static func shippedPlaceholderTokens() throws -> [String] {
        let root = TestPaths.repoRoot
        var tokens: [String] = []
        for (file, prefix) in [("README.md", "BOUNCER_ADMIN_TOKEN="), ("deploy/README.md", "BOUNCER_ADMIN_TOKEN="),
                               ("deploy/.env.example", "BOUNCER_ADMIN_TOKEN="), ("deploy/.env.example", "BOUNCER_METRICS_TOKEN="),
                               ("deploy/k8s/secret.example.yaml", "admin-token: ")] {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                guard let range = line.range(of: prefix) else { continue }
                let value = line[range.upperBound...].prefix { $0 != " " }.trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
                // Generated on the spot (`$(openssl rand …)`) or a variable: not a placeholder.
                if value.isEmpty || value.hasPrefix("$") { continue }
                tokens.append(value)
            }
        }
        return tokens
    }

    func testShortAndPlaceholderTokensAreRefusedWithHowToMakeOne() throws {
        let placeholders = try Self.shippedPlaceholderTokens()
        XCTAssertGreaterThanOrEqual(placeholders.count, 2, "the .env and k8s examples show one each: \(placeholders)")
        // BOUNCER_WORKERS=0 is wrong too, so every run exits at once with its problems (never serves).
        let cases: [(String, String, String)] = [
            ("BOUNCER_ADMIN_TOKEN", "admin-token-0123456789", "must be at least 32 characters"),
            ("BOUNCER_METRICS_TOKEN", "metrics-token-0123456789", "must be at least 32 characters"),
        ] + placeholders.flatMap { token in
            [("BOUNCER_ADMIN_TOKEN", token, "is the placeholder"), ("BOUNCER_METRICS_TOKEN", token, "is the placeholder"),
             ("BOUNCER_ADMIN_TOKEN", token.uppercased(), "is the placeholder")]
        }
        for (name, value, problem) in cases {
            let r = try run(["serve"], environment: [name: value, "BOUNCER_WORKERS": "0"])
            XCTAssertEqual(r.status, 2, "\(name)=\(value)")
            XCTAssertTrue(r.stderr.contains("\(name)=<redacted>: \(problem)"), "\(name)=\(value): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("openssl rand -base64 32"), r.stderr)
            XCTAssertFalse(r.stderr.contains(value), "the token is never echoed")
        }
        // A generated token is fine: only the other problem is reported.
        let good = try run(["serve"], environment: [
            "BOUNCER_ADMIN_TOKEN": "q8Vb3nWm2Lr5Zt7Kx0Pd4Hs6Jf9Gc1Ya+Ee2Uo3Ii4A=", "BOUNCER_WORKERS": "0"])
        XCTAssertEqual(good.status, 2)
        XCTAssertFalse(good.stderr.contains("BOUNCER_ADMIN_TOKEN"), good.stderr)
    }

    func testBadTrustedProxiesAndPerClientCapAreExplained() throws {
        let r = try run(["serve"], environment: [
            "BOUNCER_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.1/24", "BOUNCER_MAX_CONNECTIONS_PER_CLIENT": "-1"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains(#"BOUNCER_TRUSTED_PROXIES="10.0.0.0/8, 192.168.1.1/24": "192.168.1.1/24" has host bits set; did you mean 192.168.1.0/24?"#), r.stderr)
        XCTAssertTrue(r.stderr.contains(#"BOUNCER_MAX_CONNECTIONS_PER_CLIENT="-1": must be an integer in 0...1000000"#), r.stderr)
        let help = try run(["serve", "--help"])
        XCTAssertTrue(help.stdout.contains("BOUNCER_MAX_CONNECTIONS_PER_CLIENT"), help.stdout)
        XCTAssertTrue(help.stdout.contains("BOUNCER_TRUSTED_PROXIES"), help.stdout)
    }

    func testCommandLineContract() throws {
        let version = try run(["version"])
        XCTAssertEqual(version.status, 0)
        XCTAssertTrue(version.stdout.hasPrefix("bouncer "))
        let help = try run(["help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.contains("serve"))
        let serveHelp = try run(["serve", "--help"])
        XCTAssertEqual(serveHelp.status, 0)
        XCTAssertTrue(serveHelp.stdout.contains("BOUNCER_PORT"))
        let unknown = try run(["frobnicate"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.stderr.contains("usage: bouncer"))
        XCTAssertEqual(unknown.stdout, "")
        let badFlag = try run(["serve", "--bogus"])
        XCTAssertEqual(badFlag.status, 2)
        XCTAssertTrue(badFlag.stderr.contains("usage: bouncer serve"))
        let none = try run([])
        XCTAssertEqual(none.status, 2)
        let versionFlag = try run(["version", "--help"])
        XCTAssertEqual(versionFlag.status, 0)
    }
}
