import Foundation
import Glibc
import XCTest
@testable import HTTPCore

/// Hostile clients against a live server: each abuse is answered with its exact status and the
/// connection closed, while the bytes the server buffers for that connection stay bounded.
final class EdgeAbuseTests: XCTestCase {
    var server: HTTPServer?
    var port = 0
    let log = LogLines()

    func start(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in }) throws {
        var c = HTTPServer.Configuration()
        c.workerCount = 2
        c.eventLoopCount = 2
        configure(&c)
        var r = Router()
        r.add(.get, "/ping", placement: .eventLoop) { _ in .json(200, Array(#"{"pong":true}"#.utf8)) }
        r.add(.post, "/echo") { req in Response(status: 200, body: Array(String(req.body.count).utf8)) }
        r.add(.get, "/whoami", placement: .eventLoop) { req in
            Response(status: 200, body: Array("\(req.clientAddress) via \(req.remoteAddress)".utf8))
        }
        (server, port) = try startLiveServer(c, router: r, accessLog: log)
    }

    static let chunkedHead = "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"

    /// Streams `piece` after a chunked head until the server answers; asserts status, code, close and the bound.
    func assertFloodRefused(_ piece: String, status: Int, code: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let c = try TestClient(port: port)
        try c.send(Self.chunkedHead)
        let sent = c.flood(Array(piece.utf8), limit: 32 * 1024 * 1024)
        let r = try c.readResponse()
        XCTAssertEqual(r.status, status, "after \(sent) bytes", file: file, line: line)
        XCTAssertEqual(r.header("Connection"), "close", file: file, line: line)
        XCTAssertTrue(r.text.contains(#""code":"\#(code)""#), r.text, file: file, line: line)
        XCTAssertTrue(c.isClosedByPeer(), file: file, line: line)
        let peak = server?.peakConnectionInputBytes ?? .max
        // Head + 128 KiB wire budget + one 64 KiB read, with slack for a trailer line: far below 32 MiB.
        XCTAssertLessThanOrEqual(peak, 256 * 1024, "input buffered for one connection", file: file, line: line)
    }

    func testOneByteChunksWithLongExtensionsAre413() throws {
        try start()
        // Each chunk carries 1 decoded byte and ~1 KiB of extension: the decoded limit alone would
        // let the connection buffer ~64 MiB; the wire budget stops it at 128 KiB.
        try assertFloodRefused("1;ext=" + String(repeating: "a", count: 1000) + "\r\nx\r\n", status: 413, code: "PAYLOAD_TOO_LARGE")
    }

    func testZeroPaddedChunkSizesWithExtensionsAre413() throws {
        try start()
        try assertFloodRefused("000000000000001;a=b;c=d;" + String(repeating: "e", count: 900) + "\r\ny\r\n",
                               status: 413, code: "PAYLOAD_TOO_LARGE")
    }

    func testEndlessChunkExtensionIs400() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send(Self.chunkedHead + "0;ext=")
        c.flood(Array(String(repeating: "a", count: 4096).utf8), limit: 32 * 1024 * 1024)
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 400)
        XCTAssertTrue(r.text.contains(#""code":"BAD_REQUEST""#))
        XCTAssertTrue(c.isClosedByPeer())
        XCTAssertLessThanOrEqual(server?.peakConnectionInputBytes ?? .max, 256 * 1024)
    }

    func testEndlessTrailersAre431() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send(Self.chunkedHead + "1\r\nx\r\n0\r\n")
        c.flood(Array(("X-Trailer: " + String(repeating: "t", count: 200) + "\r\n").utf8), limit: 32 * 1024 * 1024)
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 431)
        XCTAssertTrue(r.text.contains(#""code":"HEADERS_TOO_LARGE""#))
        XCTAssertTrue(c.isClosedByPeer())
        XCTAssertLessThanOrEqual(server?.peakConnectionInputBytes ?? .max, 256 * 1024)
    }

    func testFullSizeChunkedBodyStillFits() throws {
        try start()
        let c = try TestClient(port: port)
        // 64 KiB in 1 KiB chunks with a short extension each: 68 KiB on the wire, inside the budget.
        let chunk = "400;n=v\r\n" + String(repeating: "z", count: 1024) + "\r\n"
        try c.send(Self.chunkedHead + String(repeating: chunk, count: 64) + "0\r\nX-Sum: 1\r\n\r\n")
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.text, "65536")
    }

    // MARK: per-client connection cap and trusted proxies

    func whoami(_ c: TestClient, forwardedFor: String? = nil) throws -> TestClient.Response {
        try c.send("GET /whoami HTTP/1.1\r\nHost: t\r\n" + (forwardedFor.map { "X-Forwarded-For: \($0)\r\n" } ?? "") + "\r\n")
        return try c.readResponse()
    }

    /// The canned overload answer: 503, Retry-After, the JSON error fields, then close.
    func assertRefused(_ c: TestClient, file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 503, file: file, line: line)
        XCTAssertEqual(r.header("Retry-After"), "1", file: file, line: line)
        let body = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any], file: file, line: line)
        XCTAssertEqual(body["code"] as? String, "OVERLOADED", file: file, line: line)
        XCTAssertEqual(body["error"] as? String, "Too many connections", file: file, line: line)
        XCTAssertNotNil(body["suggestion"] as? String, file: file, line: line)
        XCTAssertTrue(c.isClosedByPeer(), file: file, line: line)
    }

    func waitForConnections(_ expected: Int) {
        for _ in 0..<200 where server?.connectionCount != expected { usleep(5_000) }
        XCTAssertEqual(server?.connectionCount, expected)
    }

    func testPerClientCapRefusesOnlyThatClientsExtraConnection() throws {
        try start { $0.maxConnectionsPerClient = 3 }
        var held = try (0..<3).map { _ in try TestClient(port: port) }
        for c in held { XCTAssertEqual(try whoami(c).status, 200) }
        try assertRefused(try TestClient(port: port))
        // Another address still gets in, and the capped client keeps its three connections working.
        let other = try TestClient(port: port, from: "127.0.0.2")
        XCTAssertEqual(try whoami(other).text, "127.0.0.2 via 127.0.0.2")
        for c in held { XCTAssertEqual(try whoami(c).status, 200) }
        // Closing one gives its slot back.
        held.removeLast()
        waitForConnections(3)
        XCTAssertEqual(try whoami(try TestClient(port: port)).status, 200)
    }

    func testPerClientCapZeroIsOff() throws {
        try start { $0.maxConnectionsPerClient = 0 }
        let clients = try (0..<6).map { _ in try TestClient(port: port) }
        for c in clients { XCTAssertEqual(try whoami(c).status, 200) }
    }

    func testForwardedForIsHonouredOnlyFromATrustedProxy() throws {
        let proxies = try IPNetwork.parseList("127.0.0.2/32")
        try start { $0.trustedProxies = proxies }
        let proxy = try TestClient(port: port, from: "127.0.0.2")
        XCTAssertEqual(try whoami(proxy, forwardedFor: "6.6.6.6, 198.51.100.7").text, "198.51.100.7 via 127.0.0.2")
        XCTAssertEqual(try whoami(proxy).text, "127.0.0.2 via 127.0.0.2", "no header: the proxy itself")
        let direct = try TestClient(port: port)
        XCTAssertEqual(try whoami(direct, forwardedFor: "198.51.100.7").text, "127.0.0.1 via 127.0.0.1", "spoofed header ignored")
        let lines = log.all.filter { $0.contains("/whoami") }
        XCTAssertEqual(lines.count, 3)
        XCTAssertTrue(lines[0].contains(#""remote":"198.51.100.7""#), lines[0])
        XCTAssertTrue(lines[2].contains(#""remote":"127.0.0.1""#), lines[2])
    }

    /// Behind the trusted proxy 127.0.0.2 with a cap of 2: `first` and `same` (one client) take both slots, a third
    /// connection for `refused` (that client again) is refused, and `other` (another client) still gets in.
    func assertCapPerForwardedClient(
        first: String, same: String, refused: String, other: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let proxies = try IPNetwork.parseList("127.0.0.0/30")
        try start {
            $0.maxConnectionsPerClient = 2
            $0.trustedProxies = proxies
        }
        // The proxy opens more connections than the cap: it is not capped itself, its clients are.
        let a1 = try TestClient(port: port, from: "127.0.0.2"), a2 = try TestClient(port: port, from: "127.0.0.2")
        XCTAssertEqual(try whoami(a1, forwardedFor: first).status, 200, file: file, line: line)
        XCTAssertEqual(try whoami(a2, forwardedFor: same).status, 200, file: file, line: line)
        let a3 = try TestClient(port: port, from: "127.0.0.2")
        try a3.send("GET /whoami HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: \(refused)\r\n\r\n")
        try assertRefused(a3, file: file, line: line)
        let b = try TestClient(port: port, from: "127.0.0.2")
        XCTAssertEqual(try whoami(b, forwardedFor: other).text, "\(other) via 127.0.0.2", file: file, line: line)
        // The refused connection's client is logged as the forwarded one.
        XCTAssertTrue(log.all.contains { $0.contains(#""status":503"#) && $0.contains(#""remote":"\#(refused)""#) },
                      file: file, line: line)
    }

    func testCapAppliesPerForwardedClientBehindATrustedProxy() throws {
        try assertCapPerForwardedClient(first: "198.51.100.7", same: "198.51.100.7", refused: "198.51.100.7",
                                        other: "198.51.100.8")
    }

    func testCapCountsAnIPv6ClientByItsSlash64() throws {
        // One host rotating through addresses of its /64 is one client; the next /64 is another.
        try assertCapPerForwardedClient(first: "2001:db8:1:2::7", same: "2001:db8:1:2:aaaa:bbbb:cccc:dddd",
                                        refused: "2001:db8:1:2::8", other: "2001:db8:1:3::7")
    }
}
