import Crypto
import Foundation
import Glibc
import JSON
import TestSupport
import XCTest

/// `bouncer serve` with `BOUNCER_TLS_CERT_FILE`/`BOUNCER_TLS_KEY_FILE`: HTTPS with a CA made by the test, a client
/// that verifies the host name, SIGHUP and file-change reloads under load, a bad pair refused, the redirect port.
final class HTTPSE2ETests: XCTestCase {
    var pki: TLSTestPKI!
    var certificatePath: String { pki.servingCertificateFile }
    var keyPath: String { pki.servingKeyFile }

    override func setUpWithError() throws { pki = try TLSTestPKI.makeServing() }

    override func tearDown() { pki.remove() }

    /// Replaces the served files the way certbot and cert-manager do (write, then rename over).
    func install(certificate: String, key: String) throws { try pki.installServing(certificate: certificate, key: key) }

    func tlsEnvironment(_ extra: [String: String?] = [:]) -> [String: String?] {
        var env: [String: String?] = ["BOUNCER_TLS_CERT_FILE": certificatePath, "BOUNCER_TLS_KEY_FILE": keyPath,
                                      "BOUNCER_ACCESS_LOG": "on"]
        for (k, v) in extra { env[k] = v }
        return env
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw HarnessFailure(description: "no free port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func testHTTPSReloadOnSIGHUPUnderLoadRefusesABadPairAndRedirectsPlainHTTP() throws {
        let db = try E2EDatabase(label: "https")
        let redirectPort = try Self.freePort()
        let server = try BouncerProcess(databaseURL: db.url, overrides: tlsEnvironment([
            "BOUNCER_HTTP_REDIRECT_PORT": String(redirectPort), "BOUNCER_TLS_RELOAD_CHECK_SECONDS": "3600"]))
        XCTAssertEqual(server.listeningLine, "listening on https://127.0.0.1:\(server.port)\n")
        let oldSerial = try pki.serial(ofCertificate: pki.serverCertificateFile)

        // HTTPS with the host name verified; the API behind it as usual.
        let client = try TLSTestClient(port: server.port, caFile: pki.caFile, serverName: "localhost")
        XCTAssertEqual(client.connection.negotiatedApplicationProtocol, "http/1.1")
        XCTAssertEqual(client.connection.peerCertificateSerial, oldSerial)
        let health = try client.request("/healthz")
        XCTAssertEqual(health.status, 200)
        XCTAssertEqual(health.text, #"{"status":"ok"}"#)
        let projects = try client.request("/v1/admin/projects", headers: E2E.admin)
        XCTAssertEqual(projects.status, 200, projects.description)
        let unauthorized = try client.request("/v1/admin/projects")
        XCTAssertEqual(unauthorized.status, 401)
        XCTAssertEqual(try unauthorized.errorFields()["code"], "AUTH_INVALID_ADMIN_TOKEN")

        // Plain HTTP on the HTTPS port: 400 TLS_REQUIRED in clear text, then closed.
        let plain = try TestClient(port: server.port)
        try plain.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let refused = try TestClient.parse(try plain.readToEOF())
        XCTAssertEqual(refused.status, 400)
        XCTAssertEqual(refused.header("Connection"), "close")
        XCTAssertEqual(try refused.errorFields(), .object(JSONObject([
            ("error", "This port speaks HTTPS only; the request was sent as plain HTTP"), ("code", "TLS_REQUIRED"),
            ("suggestion", "Use an https:// URL for this host and port."),
        ])))

        // The redirect port: /healthz answers, everything else is a 308 to the HTTPS port, a bad Host a 400
        // (testTheRedirectPortNamesOnlyItsOwnHost has the rest).
        let redirect = try TestClient(port: redirectPort)
        let probe = try redirect.request("GET", "/healthz")
        XCTAssertEqual(probe.status, 200)
        XCTAssertEqual(probe.text, #"{"status":"ok"}"#)
        let moved = try redirect.request("POST", "/v1/receipts/pk_x", body: Array("{}".utf8), host: "localhost:\(redirectPort)")
        XCTAssertEqual(moved.status, 308)
        XCTAssertEqual(moved.header("Location"), "https://localhost:\(server.port)/v1/receipts/pk_x")
        let query = try redirect.request("GET", "/v1/subscriptions/pk_x/u?x=1", host: "127.0.0.1:\(redirectPort)")
        XCTAssertEqual(query.header("Location"), "https://127.0.0.1:\(server.port)/v1/subscriptions/pk_x/u?x=1")
        let badHost = try redirect.request("GET", "/", host: "evil.test/path")
        XCTAssertEqual(badHost.status, 400)
        XCTAssertEqual(try badHost.errorFields()["code"], "BAD_REQUEST")

        // Reload under load: two keep-alive connections keep asking while the pair is renewed and SIGHUP sent.
        let renewed = try pki.issueServerCertificate(named: "renewed")
        let newSerial = try pki.serial(ofCertificate: renewed.certificate)
        let loaders = try (0..<2).map { _ in try TLSTestClient(port: server.port, caFile: pki.caFile) }
        let load = TLSClientLoad(loaders) { _, _, loader in
            let r = try loader.request("/healthz")
            return r.status != 200 ? r.description : nil
        }
        load.wait(untilServed: 20)
        try install(certificate: renewed.certificate, key: renewed.key)
        kill(server.process.processIdentifier, SIGHUP)
        XCTAssertTrue(E2E.eventually {
            server.stderr.contains(#"{"event":"tls_reload","trigger":"sighup","outcome":"ok","certificate_serial":"\#(newSerial)"}"#)
        }, server.stderr)
        load.wait(untilServed: load.served + 20, unlessFailed: true)
        XCTAssertEqual(load.finish(), [])
        XCTAssertEqual(loaders[0].connection.peerCertificateSerial, oldSerial)
        XCTAssertEqual(try TLSTestClient(port: server.port, caFile: pki.caFile).connection.peerCertificateSerial, newSerial)

        // A bad pair (the renewed certificate with another key): refused with one log line, the renewed pair serves on.
        try install(certificate: renewed.certificate, key: pki.wrongNameKeyFile)
        kill(server.process.processIdentifier, SIGHUP)
        XCTAssertTrue(E2E.eventually { server.stderr.contains(#""trigger":"sighup","outcome":"refused""#) }, server.stderr)
        let refusal = try XCTUnwrap(server.stderr.split(separator: "\n").first { $0.contains(#""outcome":"refused""#) })
        XCTAssertTrue(refusal.contains("cannot load a private key matching the certificate from \(keyPath)"), String(refusal))
        XCTAssertTrue(refusal.contains(#""serving_serial":"\#(newSerial)""#), String(refusal))
        let stillServing = try TLSTestClient(port: server.port, caFile: pki.caFile)
        XCTAssertEqual(stillServing.connection.peerCertificateSerial, newSerial)
        XCTAssertEqual(try stillServing.request("/healthz").status, 200)
        XCTAssertEqual(try client.request("/healthz").status, 200, "the first connection survived both reloads")

        server.stopAndAssertCleanExitKeepingLog()
        // No key material in the log, whatever was reloaded or refused.
        for keyFile in [pki.serverKeyFile, renewed.key, pki.wrongNameKeyFile] {
            let pem = try String(contentsOfFile: keyFile, encoding: .utf8)
            for line in pem.split(separator: "\n") where !line.hasPrefix("-----") {
                XCTAssertFalse(server.stderr.contains(line), "key material in the log")
            }
        }
        XCTAssertFalse(server.stderr.contains("PRIVATE KEY"))
        try? FileManager.default.removeItem(atPath: server.stderrPath)
    }

    /// The redirect port never sends a client to a host the request chose: Location names the certificate's own
    /// name (or BOUNCER_PUBLIC_HOST), any other Host is 421, and no request target moves the redirect elsewhere.
    func testTheRedirectPortNamesOnlyItsOwnHost() throws {
        let db = try E2EDatabase(label: "https_redirect")
        func raw(_ port: Int, _ request: String) throws -> HTTPResponse {
            let c = try TestClient(port: port)
            try c.send(request)
            return try c.readResponse()
        }
        func assertMisdirected(_ r: HTTPResponse, file: StaticString = #filePath, line: UInt = #line) throws {
            XCTAssertEqual(r.status, 421, r.description, file: file, line: line)
            XCTAssertNil(r.header("Location"), file: file, line: line)
            XCTAssertEqual(r.header("X-Content-Type-Options"), "nosniff", file: file, line: line)
            XCTAssertEqual(try r.errorFields(), .object(JSONObject([
                ("error", "This server does not answer for that host"), ("code", "MISDIRECTED_REQUEST"),
                ("suggestion", "Use an https:// URL with this server's own host name."),
            ])), file: file, line: line)
        }

        // Without BOUNCER_PUBLIC_HOST: the certificate's names (DNS:localhost, IP:127.0.0.1) and nothing else.
        var redirectPort = try Self.freePort()
        var server = try BouncerProcess(databaseURL: db.url, overrides: tlsEnvironment([
            "BOUNCER_HTTP_REDIRECT_PORT": String(redirectPort)]))
        let https = server.port
        let moved = try raw(redirectPort, "GET /v1/x?y=1 HTTP/1.1\r\nHost: LOCALHOST:\(redirectPort)\r\n\r\n")
        XCTAssertEqual(moved.status, 308)
        XCTAssertEqual(moved.header("Location"), "https://localhost:\(https)/v1/x?y=1")
        XCTAssertEqual(moved.header("X-Content-Type-Options"), "nosniff")
        XCTAssertEqual(try raw(redirectPort, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").header("Location"),
                       "https://127.0.0.1:\(https)/")
        for host in ["evil.example", "evil.example:\(redirectPort)", "[::1]", "sub.localhost", "localhost.evil.example"] {
            try assertMisdirected(try raw(redirectPort, "GET /v1/x HTTP/1.1\r\nHost: \(host)\r\n\r\n"))
        }
        XCTAssertEqual(try raw(redirectPort, "GET / HTTP/1.1\r\nHost: .localhost\r\n\r\n").status, 400,
                       "not a host name (OpenSSL would read it as any subdomain)")
        // No target moves the redirect to another host: a network-path reference, absolute-form (its authority is
        // ignored, RFC 9112 §3.2.2), backslashes, encoded CR/LF (stays encoded), raw CR/LF (a 400 before routing).
        let targets = [
            "//evil.example/x": "https://localhost:\(https)/evil.example/x",
            "/\\evil.example": "https://localhost:\(https)/evil.example",
            "http://evil.example/x": "https://localhost:\(https)/x",
            "https://evil.example": "https://localhost:\(https)/",
            "/a%0d%0aSet-Cookie:%20x=1": "https://localhost:\(https)/a%0d%0aSet-Cookie:%20x=1",
        ]
        for (target, location) in targets {
            let r = try raw(redirectPort, "GET \(target) HTTP/1.1\r\nHost: localhost\r\n\r\n")
            XCTAssertEqual(r.status, 308, target)
            XCTAssertEqual(r.header("Location"), location, target)
            XCTAssertNil(r.header("Set-Cookie"), target)
        }
        let asterisk = try raw(redirectPort, "OPTIONS * HTTP/1.1\r\nHost: localhost\r\n\r\n")
        XCTAssertEqual(asterisk.header("Location"), "https://localhost:\(https)/")
        let split = try raw(redirectPort, "GET /a\rLocation: https://evil.example/ HTTP/1.1\r\nHost: localhost\r\n\r\n")
        XCTAssertEqual(split.status, 400)
        XCTAssertNil(split.header("Location"))
        XCTAssertEqual(split.header("X-Content-Type-Options"), "nosniff")
        server.stopAndAssertCleanExit()

        // With BOUNCER_PUBLIC_HOST (and its public port): only that host is redirected, even the certificate's
        // own names are not.
        redirectPort = try Self.freePort()
        server = try BouncerProcess(databaseURL: db.url, overrides: tlsEnvironment([
            "BOUNCER_HTTP_REDIRECT_PORT": String(redirectPort), "BOUNCER_PUBLIC_HOST": "Bouncer.Example:8443"]))
        let named = try raw(redirectPort, "POST /v1/receipts/pk_x HTTP/1.1\r\nHost: bouncer.example\r\nContent-Length: 2\r\n\r\n{}")
        XCTAssertEqual(named.status, 308)
        XCTAssertEqual(named.header("Location"), "https://bouncer.example:8443/v1/receipts/pk_x")
        try assertMisdirected(try raw(redirectPort, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"))
        try assertMisdirected(try raw(redirectPort, "GET / HTTP/1.1\r\nHost: bouncer.example.evil.example\r\n\r\n"))
        XCTAssertEqual(try raw(redirectPort, "GET /healthz HTTP/1.1\r\nHost: anything\r\n\r\n").status, 200,
                       "probes need no name")
        server.stopAndAssertCleanExit()
    }

    func testThePeriodicCheckPicksUpRenewedFiles() throws {
        let db = try E2EDatabase(label: "https_watch")
        let server = try BouncerProcess(databaseURL: db.url, overrides: tlsEnvironment(["BOUNCER_TLS_RELOAD_CHECK_SECONDS": "0.2"]))
        let renewed = try pki.issueServerCertificate(named: "renewed")
        let newSerial = try pki.serial(ofCertificate: renewed.certificate)
        try install(certificate: renewed.certificate, key: renewed.key)
        XCTAssertTrue(E2E.eventually {
            server.stderr.contains(#"{"event":"tls_reload","trigger":"file_change","outcome":"ok","certificate_serial":"\#(newSerial)"}"#)
        }, server.stderr)
        XCTAssertEqual(try TLSTestClient(port: server.port, caFile: pki.caFile).connection.peerCertificateSerial, newSerial)
        server.stopAndAssertCleanExit()
    }

    func testTLSConfigurationErrorsStopTheServerWithAClearMessage() throws {
        let db = try E2EDatabase(label: "https_config")
        func serve(_ overrides: [String: String?]) throws -> CLIRun {
            try CLIRun.run(["serve"], environment: BouncerProcess.environment(databaseURL: db.url, overrides: overrides))
        }
        let onlyCertificate = try serve(["BOUNCER_TLS_CERT_FILE": certificatePath])
        XCTAssertEqual(onlyCertificate.status, 2)
        XCTAssertTrue(onlyCertificate.stderr.contains(
            "BOUNCER_TLS_CERT_FILE is set without BOUNCER_TLS_KEY_FILE: HTTPS needs both the certificate chain and its private key"),
            onlyCertificate.stderr)
        let redirectWithoutTLS = try serve(["BOUNCER_HTTP_REDIRECT_PORT": "8081"])
        XCTAssertEqual(redirectWithoutTLS.status, 2)
        XCTAssertTrue(redirectWithoutTLS.stderr.contains("BOUNCER_HTTP_REDIRECT_PORT is set without HTTPS"), redirectWithoutTLS.stderr)
        let badPublicHost = try serve(tlsEnvironment(["BOUNCER_PUBLIC_HOST": "https://bouncer.example/"]))
        XCTAssertEqual(badPublicHost.status, 2)
        XCTAssertTrue(badPublicHost.stderr.contains(
            #"BOUNCER_PUBLIC_HOST="https://bouncer.example/": must be a host name or IP address, optionally with :port"#),
            badPublicHost.stderr)
        let mismatched = try serve(["BOUNCER_TLS_CERT_FILE": certificatePath, "BOUNCER_TLS_KEY_FILE": pki.wrongNameKeyFile])
        XCTAssertEqual(mismatched.status, 1)
        XCTAssertTrue(mismatched.stderr.contains(
            "bouncer serve: TLS: configuration: cannot load a private key matching the certificate from \(pki.wrongNameKeyFile)"),
            mismatched.stderr)
        XCTAssertFalse(mismatched.stdout.contains("listening"))
    }
}
