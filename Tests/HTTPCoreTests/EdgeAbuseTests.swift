import Foundation
import Glibc
import XCTest
@testable import HTTPCore

/// Hostile clients against a live server: each abuse is answered with its exact status and the
/// connection closed, while the bytes the server buffers for that connection stay bounded.
final class EdgeAbuseTests: XCTestCase {
    var server: HTTPServer?
    var port = 0

    override func tearDown() {
        server?.shutdown(gracePeriod: .seconds(2))
        server = nil
    }

    func start(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in }) throws {
        var c = HTTPServer.Configuration()
        c.port = 0
        c.workerCount = 2
        c.eventLoopCount = 2
        configure(&c)
        var r = Router()
        r.add(.get, "/ping", placement: .eventLoop) { _ in .json(200, Array(#"{"pong":true}"#.utf8)) }
        r.add(.post, "/echo") { req in Response(status: 200, body: Array(String(req.body.count).utf8)) }
        let s = HTTPServer(configuration: c, router: r, accessLog: nil)
        port = try s.start()
        server = s
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
}
