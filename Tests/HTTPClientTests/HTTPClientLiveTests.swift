import Crypto
import Foundation
import HTTPClient
import TestSupport
import Synchronization
import XCTest

/// The client against a real local HTTP(S) server (TestSupport's `LocalHTTPSServer`) with a PKI made by the test.
final class HTTPClientLiveTests: XCTestCase {
    private var pki: TLSTestPKI!

    override func setUpWithError() throws { pki = try TLSTestPKI.make() }
    override func tearDown() { pki.remove() }

    private func client(caFile: String? = nil, readTimeout: Duration = .seconds(5), limits: ResponseParser.Limits = ResponseParser.Limits(),
                        retry: RetryPolicy = RetryPolicy(baseDelay: .milliseconds(1))) throws -> HTTPClient {
        try HTTPClient(configuration: HTTPClient.Configuration(
            tls: TLSClientConfiguration(trustsSystemRoots: false, additionalCAFile: caFile ?? pki.caFile),
            connectTimeout: .seconds(5), readTimeout: readTimeout, maxIdleConnectionsPerHost: 2, limits: limits, retry: retry))
    }

    private func assertCode(_ code: HTTPClientError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, code, "\(error)", file: file, line: line)
        }
    }

    func testHTTPSKeepAliveReusesOneConnection() throws {
        let server = try LocalHTTPSServer(tls: pki.serverConfiguration) { request in
            .respond(status: 200, headers: [("Content-Type", "application/json")], body: #"{"path":"\#(request.path)","n":\#(request.body.count)}"#)
        }
        defer { server.stop() }
        let client = try client()
        for index in 0..<5 {
            let response = try client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/items/\(index)?q=a%20b"))
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(String(decoding: response.body, as: UTF8.self), #"{"path":"/items/\#(index)?q=a%20b","n":0}"#)
        }
        let post = try client.send(HTTPClientRequest(method: "POST", url: "https://localhost:\(server.port)/post",
                                                     headers: [("Authorization", "Bearer x")], body: Array("hello".utf8)))
        XCTAssertEqual(String(decoding: post.body, as: UTF8.self), #"{"path":"/post","n":5}"#)
        XCTAssertEqual(server.connectionCount, 1)
        XCTAssertEqual(client.connectionsOpened, 1)
        XCTAssertEqual(client.connectionsReused, 5)
        let requests = server.requests
        XCTAssertEqual(requests.count, 6)
        XCTAssertEqual(requests[0].header("Host"), "localhost:\(server.port)")
        XCTAssertEqual(requests[5].header("Content-Length"), "5")
        XCTAssertEqual(requests[5].header("Authorization"), "Bearer x")
        XCTAssertEqual(requests[5].body, Array("hello".utf8))

    }

    func testPoolBoundIdleAgeAndShutdown() throws {
        let server = try LocalHTTPSServer { _ in .respond(status: 200, body: "ok") }
        defer { server.stop() }
        let client = try HTTPClient(configuration: HTTPClient.Configuration(maxIdleConnectionsPerHost: 2, maxIdleTime: .milliseconds(300), retry: .never))
        // Four concurrent requests need four connections; only two stay pooled afterwards.
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<3 { XCTAssertEqual((try? client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")))?.status, 200) }
        }
        let opened = client.connectionsOpened
        XCTAssertLessThanOrEqual(opened, 12)
        for _ in 0..<4 { _ = try client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")) }
        XCTAssertEqual(client.connectionsOpened, opened)   // sequential requests reuse a pooled one
        Thread.sleep(forTimeInterval: 0.4)                  // older than maxIdleTime: not reused
        _ = try client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
        XCTAssertEqual(client.connectionsOpened, opened + 1)
        client.shutdown()
        _ = try client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
        _ = try client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
        XCTAssertEqual(client.connectionsOpened, opened + 3)   // after shutdown nothing is pooled
    }

    func testIdleConnectionClosedByServerIsNotReused() throws {
        let server = try LocalHTTPSServer(tls: pki.serverConfiguration) { _ in .respondThenClose(status: 200, body: "bye") }
        defer { server.stop() }
        let client = try client(retry: .never)
        for _ in 0..<3 {
            XCTAssertEqual(try client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/")).body, Array("bye".utf8))
            Thread.sleep(forTimeInterval: 0.05)   // let the server's close arrive
        }
        // Each pooled socket was found closed (poll: readable/HUP) and dropped before use.
        XCTAssertEqual(client.connectionsOpened, 3)
        XCTAssertEqual(client.connectionsReused, 0)
        XCTAssertEqual(server.connectionCount, 3)
    }

    func testRefusesWrongHostNameAndUntrustedCA() throws {
        let wrongName = try LocalHTTPSServer(tls: pki.wrongNameConfiguration) { _ in .respond(status: 200) }
        defer { wrongName.stop() }
        let client = try client()
        assertCode(.tls) { _ = try client.send(HTTPClientRequest(url: "https://localhost:\(wrongName.port)/")) }
        do { _ = try client.execute(HTTPClientRequest(url: "https://127.0.0.1:\(wrongName.port)/")) } catch {
            XCTAssertEqual(error.code, .tls)
            XCTAssertEqual(error.attempts, 1)   // certificate failures are final, never retried
            XCTAssertTrue(error.reason.contains("IP address mismatch"), error.reason)
        }
        let server = try LocalHTTPSServer(tls: pki.serverConfiguration) { _ in .respond(status: 200) }
        defer { server.stop() }
        let untrusting = try self.client(caFile: pki.otherCAFile)
        assertCode(.tls) { _ = try untrusting.send(HTTPClientRequest(url: "https://localhost:\(server.port)/")) }
        XCTAssertEqual(wrongName.requests.count + server.requests.count, 0)   // nothing was ever sent
        assertCode(.tls) { _ = try HTTPClient(configuration: HTTPClient.Configuration(tls: TLSClientConfiguration(additionalCAFile: "/nonexistent.pem"))) }
    }

    func testPlainHTTPChunkedAndOversized() throws {
        let big = String(repeating: "x", count: 4096)
        let server = try LocalHTTPSServer { request in
            switch request.path {
            case "/chunked": return .raw(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n".utf8))
            case "/big": return .respond(status: 200, body: big)
            case "/big-chunked": return .raw(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n\(big)\r\n0\r\n\r\n".utf8))
            case "/smuggle": return .raw(Array("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc".utf8))
            default: return .respond(status: 404, body: "none")
            }
        }
        defer { server.stop() }
        let client = try client(limits: ResponseParser.Limits(maxBodyBytes: 1024))
        let chunked = try client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/chunked"))
        XCTAssertEqual(String(decoding: chunked.body, as: UTF8.self), "hello world")
        let missing = try client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/other"))
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(missing.body, Array("none".utf8))
        XCTAssertEqual(server.connectionCount, 1)   // keep-alive over plain TCP too
        assertCode(.tooLarge) { _ = try client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/big")) }
        assertCode(.tooLarge) { _ = try client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/big-chunked")) }
        assertCode(.protocolError) { _ = try client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/smuggle")) }
        assertCode(.invalidRequest) { _ = try client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/", headers: [("X", "a\r\nInjected: 1")])) }
        assertCode(.invalidRequest) { _ = try client.send(HTTPClientRequest(url: "ftp://127.0.0.1/")) }
        assertCode(.connect) { _ = try client.execute(HTTPClientRequest(url: "http://127.0.0.1:1/")) }
    }

    func testNonTLSPeersAndGarbageAnswers() throws {
        // A plain HTTP server waits for a request line that a ClientHello never completes: the handshake
        // is bounded by the connect timeout, and nothing is sent in clear.
        let plain = try LocalHTTPSServer { _ in .respond(status: 200) }
        defer { plain.stop() }
        let impatient = try HTTPClient(configuration: HTTPClient.Configuration(
            tls: TLSClientConfiguration(trustsSystemRoots: false, additionalCAFile: pki.caFile), connectTimeout: .milliseconds(300), retry: .never))
        let started = ContinuousClock.now
        assertCode(.timeout) { _ = try impatient.send(HTTPClientRequest(url: "https://localhost:\(plain.port)/")) }
        XCTAssertLessThan(ContinuousClock.now - started, .milliseconds(1500))
        XCTAssertEqual(plain.requests.count, 0)
        let client = try client(retry: .never)
        let rude = try LocalHTTPSServer { _ in .close }
        defer { rude.stop() }
        let raw = try LocalHTTPSServer { _ in .raw(Array("garbage\r\n\r\n".utf8)) }
        defer { raw.stop() }
        assertCode(.protocolError) { _ = try client.send(HTTPClientRequest(url: "http://localhost:\(raw.port)/")) }
        assertCode(.io) { _ = try client.send(HTTPClientRequest(url: "http://localhost:\(rude.port)/")) }
    }

    func testStalledServerTimesOut() throws {
        let server = try LocalHTTPSServer(tls: pki.serverConfiguration) { _ in .stall(seconds: 3) }
        defer { server.stop() }
        let client = try client(readTimeout: .milliseconds(300), retry: .never)
        let started = ContinuousClock.now
        assertCode(.timeout) { _ = try client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/slow")) }
        let waited = ContinuousClock.now - started
        XCTAssertGreaterThanOrEqual(waited, .milliseconds(300))
        XCTAssertLessThan(waited, .milliseconds(2000))
    }

    func testSlowDripIsBoundedByTheResponseTimeout() throws {
        let server = try LocalHTTPSServer { _ in .drip(Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".utf8) + [UInt8](repeating: 65, count: 100), interval: 0.05) }
        defer { server.stop() }
        let client = try HTTPClient(configuration: HTTPClient.Configuration(readTimeout: .seconds(1), responseTimeout: .milliseconds(600), retry: .never))
        let started = ContinuousClock.now
        assertCode(.timeout) { _ = try client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")) }
        XCTAssertLessThan(ContinuousClock.now - started, .milliseconds(1500))   // each byte came within readTimeout
    }

    func testRetryAfterThenSuccessAndExhausted500s() throws {
        let counter = Counter()
        let server = try LocalHTTPSServer(tls: pki.serverConfiguration) { request in
            switch request.path {
            case "/limited":
                return counter.next() == 1 ? .respond(status: 429, headers: [("Retry-After", "1")], body: "slow down") : .respond(status: 200, body: "ok")
            default:
                return .respond(status: 500, body: #"{"errorCode":5000000}"#)
            }
        }
        defer { server.stop() }
        let client = try client(retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5), maxRetryAfter: .seconds(2)))
        let started = ContinuousClock.now
        let limited = try client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/limited"))
        XCTAssertEqual(limited.status, 200)
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .seconds(1))   // Retry-After honoured
        XCTAssertEqual(server.requests.filter { $0.path == "/limited" }.count, 2)

        do {
            _ = try client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/broken"))
            XCTFail("expected serverUnavailable")
        } catch {
            XCTAssertEqual(error.code, .serverUnavailable)
            XCTAssertEqual(error.attempts, 3)
            XCTAssertEqual(error.response?.status, 500)
            XCTAssertEqual(error.response?.body, Array(#"{"errorCode":5000000}"#.utf8))
        }
        XCTAssertEqual(server.requests.filter { $0.path == "/broken" }.count, 3)
        // Not idempotent: one attempt only.
        do {
            _ = try client.send(HTTPClientRequest(method: "POST", url: "https://localhost:\(server.port)/broken", body: [1]))
            XCTFail("expected serverUnavailable")
        } catch {
            XCTAssertEqual(error.attempts, 1)
        }
        XCTAssertEqual(server.requests.filter { $0.path == "/broken" }.count, 4)
    }

    func testNetworkFailureIsRetriedForGetOnly() throws {
        let server = try LocalHTTPSServer(tls: pki.serverConfiguration) { request in
            request.connection == 1 ? .close : .respond(status: 200, body: "connection \(request.connection)")
        }
        defer { server.stop() }
        let client = try client(retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(1)))
        let response = try client.send(HTTPClientRequest(url: "https://localhost:\(server.port)/flaky"))
        XCTAssertEqual(response.body, Array("connection 2".utf8))
        XCTAssertEqual(server.connectionCount, 2)

        let postServer = try LocalHTTPSServer(tls: pki.serverConfiguration) { _ in .close }
        defer { postServer.stop() }
        do {
            _ = try client.send(HTTPClientRequest(method: "POST", url: "https://localhost:\(postServer.port)/", body: [1]))
            XCTFail("expected io")
        } catch {
            XCTAssertEqual(error.code, .io)
            XCTAssertEqual(error.attempts, 1)
        }
        XCTAssertEqual(postServer.requests.count, 1)
    }
}

/// A thread-safe counter for scripted servers.
final class Counter: Sendable {
    private let value = Mutex(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}
