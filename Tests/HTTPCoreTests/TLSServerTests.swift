import Crypto
import Foundation
import Glibc
import JSON
import Synchronization
import XCTest
@testable import HTTPCore

/// The HTTPS listener end to end on real sockets: a CA made by the test, clients that verify the host name.
final class TLSServerTests: XCTestCase {
    var pki: TLSTestPKI!
    var server: HTTPServer?
    var port = 0
    /// Copies of the PKI's server pair at paths the server is configured with (replaced by reload tests).
    var certificatePath: String { pki.servingCertificateFile }
    var keyPath: String { pki.servingKeyFile }
    let log = LogLines()

    override func setUpWithError() throws { pki = try TLSTestPKI.makeServing() }

    override func tearDown() { pki.remove() }

    /// Write-then-rename, as cert-manager and certbot do: a reader never sees half a file.
    func install(certificate: String, key: String) throws { try pki.installServing(certificate: certificate, key: key) }

    func start(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in }) throws {
        var c = HTTPServer.Configuration()
        c.workerCount = 2
        c.eventLoopCount = 2
        c.tls = TLSServerConfiguration(certificateChainFile: certificatePath, privateKeyFile: keyPath)
        configure(&c)
        var r = Router()
        r.add(.get, "/ping", placement: .eventLoop) { _ in .json(200, Array(#"{"pong":true}"#.utf8)) }
        r.add(.get, "/items/:id") { req in .json(200, Array((req.pathParameters["id"] ?? "?").utf8)) }
        r.add(.get, "/big") { _ in Response(status: 200, body: [UInt8](repeating: 0x61, count: 300_000)) }
        (server, port) = try startLiveServer(c, router: r, accessLog: log)
    }

    func testKeepAliveOverTLS13WithHostNameVerifiedAndALPN() throws {
        try start()
        let client = try TLSTestClient(port: port, caFile: pki.caFile, serverName: "localhost")
        XCTAssertEqual(client.connection.protocolVersion, "TLSv1.3")
        XCTAssertEqual(client.connection.negotiatedApplicationProtocol, "http/1.1")
        XCTAssertEqual(client.connection.peerCertificateSerial, try pki.serial(ofCertificate: pki.serverCertificateFile))
        for id in ["a", "b", "c"] {
            let r = try client.request("/items/\(id)")
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.text, id)
            XCTAssertNil(r.header("Connection"))
        }
        // A response larger than many records and the socket buffer: partial writes and WANT_WRITE resume.
        let big = try client.request("/big")
        XCTAssertEqual(big.body.count, 300_000)
        XCTAssertEqual(try client.request("/ping").text, #"{"pong":true}"#)
        XCTAssertEqual(server?.connectionCount, 1)
        // By IP address too (the certificate names IP:127.0.0.1).
        XCTAssertEqual(try TLSTestClient(port: port, caFile: pki.caFile, serverName: "127.0.0.1").request("/ping").status, 200)
    }

    func testClientRefusesAWrongHostNameAndAnUntrustedCA() throws {
        try start()
        XCTAssertThrowsError(try TLSTestClient(port: port, caFile: pki.caFile, serverName: "elsewhere.test")) { error in
            XCTAssertEqual((error as? CryptoError)?.code, .certificateRejected, "\(error)")
        }
        XCTAssertThrowsError(try TLSTestClient(port: port, caFile: pki.otherCAFile)) { error in
            XCTAssertEqual((error as? CryptoError)?.code, .certificateRejected, "\(error)")
        }
        // The failed handshakes took their connections with them; the server still answers.
        XCTAssertEqual(try TLSTestClient(port: port, caFile: pki.caFile).request("/ping").status, 200)
    }

    func testPlainHTTPOnTheTLSPortGetsTLSRequiredAndIsClosed() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send("GET /ping HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let bytes = try c.readToEOF()
        let r = try TestClient.parse(bytes)
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.header("Connection"), "close")
        XCTAssertEqual(r.header("Content-Type"), "application/json")
        let id = try XCTUnwrap(r.header("X-Request-Id"))
        XCTAssertEqual(try r.json(), .object(JSONObject([
            ("error", "This port speaks HTTPS only; the request was sent as plain HTTP"),
            ("code", "TLS_REQUIRED"),
            ("suggestion", "Use an https:// URL for this host and port."),
            ("request_id", .string(id)),
        ])))
        XCTAssertTrue(log.all.contains { $0.contains(#""status":400"#) && $0.contains(id) }, "\(log.all)")
        // Bytes that are neither TLS nor HTTP are closed without an answer.
        let junk = try TestClient(port: port)
        try junk.send([0x00, 0x01, 0x02, 0x03])
        XCTAssertTrue(closedWithoutBytes(junk))
        XCTAssertEqual(try TLSTestClient(port: port, caFile: pki.caFile).request("/ping").status, 200)
    }

    func testTLS11IsRefusedAndTLS12WorksAndResumes() throws {
        try start()
        let address = "127.0.0.1:\(port)"
        // The client is allowed TLS 1.1 (security level 0); the server must still say no.
        XCTAssertThrowsError(try Subprocess.run(
            ["openssl", "s_client", "-connect", address, "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0", "-CAfile", pki.caFile],
            in: pki.directory)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("protocol version") || text.contains("unsupported protocol"), text)
        }
        // TLS 1.2 with an ECDHE + AEAD suite, ALPN http/1.1, then a resumed session from the saved one.
        let session = pki.directory + "/session.pem"
        let first = try Subprocess.run(
            ["openssl", "s_client", "-connect", address, "-tls1_2", "-alpn", "http/1.1", "-servername", "localhost",
             "-verify_return_error", "-CAfile", pki.caFile, "-sess_out", session], in: pki.directory)
        XCTAssertTrue(first.contains("Protocol  : TLSv1.2"), first)
        XCTAssertTrue(first.contains("Cipher    : ECDHE-ECDSA-AES128-GCM-SHA256"), first)
        XCTAssertTrue(first.contains("ALPN protocol: http/1.1"), first)
        XCTAssertTrue(first.contains("Verify return code: 0 (ok)"), first)
        let second = try Subprocess.run(
            ["openssl", "s_client", "-connect", address, "-tls1_2", "-servername", "localhost", "-CAfile", pki.caFile,
             "-sess_in", session], in: pki.directory)
        XCTAssertTrue(second.contains("Reused, TLSv1.2"), second)
        // A CBC-only or non-ECDHE client finds no common suite.
        XCTAssertThrowsError(try Subprocess.run(
            ["openssl", "s_client", "-connect", address, "-tls1_2", "-cipher", "AES128-SHA:ECDHE-ECDSA-AES128-SHA",
             "-CAfile", pki.caFile], in: pki.directory))
        XCTAssertEqual(try TLSTestClient(port: port, caFile: pki.caFile).request("/ping").status, 200)
    }

    func testReloadUnderLoadKeepsOpenConnectionsAndServesTheNewCertificate() throws {
        try start()
        let oldSerial = try pki.serial(ofCertificate: pki.serverCertificateFile)
        let renewed = try pki.issueServerCertificate(named: "renewed")
        let newSerial = try pki.serial(ofCertificate: renewed.certificate)
        XCTAssertNotEqual(oldSerial, newSerial)
        XCTAssertEqual(server?.tlsCertificateSerial, oldSerial)

        // Four keep-alive connections send requests in a loop while the files are replaced and reloaded.
        let clients = try (0..<4).map { _ in try TLSTestClient(port: port, caFile: pki.caFile) }
        let load = TLSClientLoad(clients) { index, n, client in
            let r = try client.request("/items/\(index)-\(n)")
            return r.status != 200 || r.text != "\(index)-\(n)" ? "\(r)" : nil
        }
        load.wait(untilServed: 40)
        try install(certificate: renewed.certificate, key: renewed.key)
        XCTAssertEqual(try server?.reloadTLS(), TLSReload(certificateSerial: newSerial))
        load.wait(untilServed: load.served + 40, unlessFailed: true)
        XCTAssertEqual(load.finish(), [])
        // The open connections still hold the old certificate; new ones get the renewed one.
        XCTAssertEqual(clients[0].connection.peerCertificateSerial, oldSerial)
        let fresh = try TLSTestClient(port: port, caFile: pki.caFile)
        XCTAssertEqual(fresh.connection.peerCertificateSerial, newSerial)
        XCTAssertEqual(try fresh.request("/ping").status, 200)
        XCTAssertEqual(server?.tlsCertificateSerial, newSerial)
    }

    func testABadNewPairIsRefusedAndTheOldOneKeepsServing() throws {
        try start()
        let serial = try pki.serial(ofCertificate: pki.serverCertificateFile)
        // The certificate with another certificate's key, then a file that is not PEM at all.
        try install(certificate: pki.serverCertificateFile, key: pki.wrongNameKeyFile)
        XCTAssertThrowsError(try server?.reloadTLS()) { error in
            XCTAssertEqual((error as? CryptoError)?.code, .configuration, "\(error)")
            XCTAssertTrue("\(error)".contains("private key"), "\(error)")
        }
        try "not a certificate".write(toFile: certificatePath, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try server?.reloadTLS()) { error in
            XCTAssertTrue("\(error)".contains("certificate chain"), "\(error)")
        }
        XCTAssertEqual(server?.tlsCertificateSerial, serial)
        let client = try TLSTestClient(port: port, caFile: pki.caFile)
        XCTAssertEqual(client.connection.peerCertificateSerial, serial)
        XCTAssertEqual(try client.request("/ping").status, 200)
    }

    func testHandshakeFloodStaysWithinLimitsAndTheServerKeepsAnswering() throws {
        try start {
            $0.headerTimeout = .milliseconds(600)
            $0.maxConnectionsPerClient = 16
        }
        // 40 connections from one client: 20 that never send, 20 that drip the start of a ClientHello.
        var flood: [TestClient] = []
        for i in 0..<40 {
            let c = try TestClient(port: port, timeout: 10, from: "127.0.0.9")
            if i % 2 == 1 { try? c.send([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]) }
            flood.append(c)
        }
        // Another client is served meanwhile; beyond the per-client cap the flood's connections were closed at
        // accept (without a clear-text body a TLS client could not read), so at most 16 + this one are open.
        let other = try TLSTestClient(port: port, caFile: pki.caFile, serverName: "127.0.0.1", from: "127.0.0.10")
        XCTAssertEqual(try other.request("/ping").status, 200)
        XCTAssertLessThanOrEqual(server?.connectionCount ?? 99, 17)
        // At the head deadline every stalled handshake is closed (no 408 in clear text: just the close).
        for c in flood { XCTAssertTrue(closedWithoutBytes(c), "a stalled handshake gets no bytes") }
        XCTAssertEqual(try other.request("/ping").status, 200)
        var waited = 0
        while (server?.connectionCount ?? 0) > 1 && waited < 400 { usleep(5_000); waited += 1 }
        XCTAssertEqual(server?.connectionCount, 1)
        // The flooding address has its slots back.
        XCTAssertEqual(try TLSTestClient(port: port, caFile: pki.caFile, from: "127.0.0.9").request("/ping").status, 200)
    }

    /// Clients that open a connection per request (`Connection: close`) under the default per-client cap: a closed
    /// TLS connection gives its slot back at once, so 64 of them from one address are never refused.
    func testNewConnectionPerRequestClientsAreNeverRefused() throws {
        try start()
        XCTAssertEqual(HTTPServer.Configuration().maxConnectionsPerClient, 256, "the default cap is what this proves")
        let clients = 64, requestsEach = 20
        let failures = Mutex<[String]>([])
        let served = Atomic<Int>(0)
        let port = self.port, caFile = pki.caFile
        DispatchQueue.concurrentPerform(iterations: clients) { index in
            for n in 1...requestsEach {
                do {
                    let client = try TLSTestClient(port: port, caFile: caFile, serverName: "127.0.0.1")
                    let r = try client.request("/ping", headers: ["Connection": "close"])
                    // As wrk and browsers do: close_notify, then close, so both often reach the server together.
                    client.connection.shutdown(deadline: .now + .seconds(1))
                    if r.status == 200, r.header("Connection") == "close", r.text == #"{"pong":true}"# {
                        served.wrappingAdd(1, ordering: .relaxed)
                    } else {
                        failures.withLock { $0.append("client \(index) request \(n): \(r.status) \(r.text)") }
                    }
                } catch {
                    failures.withLock { $0.append("client \(index) request \(n): \(error)") }
                }
            }
        }
        let seen = failures.withLock { $0 }
        XCTAssertEqual(seen.count, 0, "refused or failed: \(seen.prefix(5))")
        XCTAssertEqual(served.load(ordering: .relaxed), clients * requestsEach)
        // Every slot is back as soon as the clients are gone (not after a linger timeout of seconds).
        var waited = 0
        while (server?.connectionCount ?? 0) > 0 && waited < 100 { usleep(5_000); waited += 1 }
        XCTAssertEqual(server?.connectionCount, 0)
    }

    /// The peer closed (EOF or reset: the server may close with the client's bytes unread) having sent nothing.
    func closedWithoutBytes(_ c: TestClient) -> Bool {
        do {
            return try c.readToEOF().isEmpty
        } catch {
            return "\(error)".contains("reset")
        }
    }

    func testFirstBytesClassification() {
        func classify(_ bytes: [UInt8]) -> FirstBytes { bytes.withUnsafeBytes { FirstBytes.classify($0) } }
        XCTAssertEqual(classify([]), .needMore)
        XCTAssertEqual(classify([0x16]), .needMore)
        XCTAssertEqual(classify([0x16, 0x03, 0x01]), .tlsHandshake)
        XCTAssertEqual(classify([0x16, 0x02]), .other)
        XCTAssertEqual(classify(Array("GET / HTTP/1.1".utf8)), .plainHTTP)
        XCTAssertEqual(classify(Array("PRI * HTTP/2.0".utf8)), .plainHTTP)
        XCTAssertEqual(classify(Array("get".utf8)), .other)
        XCTAssertEqual(classify([0x80, 0x2e, 0x01]), .other)  // an SSLv2-format hello
        XCTAssertEqual(classify([0x15, 0x03, 0x03]), .other)  // an alert record first
    }
}
