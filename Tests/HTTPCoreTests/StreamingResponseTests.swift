import Foundation
import Glibc
import Synchronization
import XCTest
@testable import HTTPCore

/// `Response.streaming`: a body written while it is sent, chunked on HTTP/1.1 and close-delimited on HTTP/1.0, whose
/// producer waits for the client (memory stays flat) and learns when the client goes away.
final class StreamingResponseTests: XCTestCase {
    struct Broken: Error {}

    /// Body bytes the producers wrote so far, and whether one saw its client go away.
    final class Probe: Sendable {
        let produced = Atomic<Int>(0)
        let cancelled = Atomic<Bool>(false)
    }

    let probe = Probe()
    var port = 0

    /// `/stream?kb=N` writes N KiB of a repeating line, 1 KiB per write; `/broken` throws after 200 KiB.
    func start(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in }) throws {
        var c = HTTPServer.Configuration()
        c.workerCount = 2
        configure(&c)
        var r = Router()
        let probe = probe
        let line = Array(String(repeating: "0123456789abcde\n", count: 64).utf8)  // 1 KiB
        r.add(.get, "/stream") { req in
            let kb = req.queryItems().first { $0.name == "kb" }.flatMap { Int($0.value) } ?? 1
            var headers = HTTPHeaders()
            headers.set("Content-Type", "text/plain")
            return .streaming(200, headers: headers, BodyStream { writer in
                do {
                    for _ in 0..<kb {
                        try writer.write(line)
                        probe.produced.add(line.count, ordering: .relaxed)
                    }
                } catch {
                    probe.cancelled.store(true, ordering: .relaxed)
                    throw error
                }
            })
        }
        r.add(.get, "/broken") { _ in
            .streaming(200, BodyStream { writer in
                for _ in 0..<200 { try writer.write(line) }
                throw Broken()
            })
        }
        r.add(.get, "/inline", placement: .eventLoop) { _ in
            .streaming(200, BodyStream { writer in try writer.write("inline body") })
        }
        r.add(.get, "/ping") { _ in .json(200, Array("pong".utf8)) }
        (_, port) = try startLiveServer(c, router: r)
    }

    func testAStreamedBodyArrivesChunkedAndTheConnectionStaysUsable() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send("GET /stream?kb=3000 HTTP/1.1\r\nHost: t\r\n\r\n")
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.header("Transfer-Encoding"), "chunked")
        XCTAssertNil(r.header("Content-Length"))
        XCTAssertEqual(r.header("Content-Type"), "text/plain")
        XCTAssertEqual(r.body.count, 3000 * 1024)
        XCTAssertEqual(Array(r.body.prefix(16)), Array("0123456789abcde\n".utf8))
        try c.send("GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
        XCTAssertEqual(try c.readResponse().text, "pong")
    }

    func testAProducerWaitsForAClientThatDoesNotRead() throws {
        try start()
        let c = try TestClient(port: port, timeout: 20)
        var small: Int32 = 64 * 1024  // no receive-window autotuning: the client's side holds little
        setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        try c.send("GET /stream?kb=32768 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")  // 32 MiB
        usleep(800_000)
        // The kernel's socket buffers (at most 4 MiB sending here, a little receiving) and two chunks.
        let held = probe.produced.load(ordering: .relaxed)
        XCTAssertLessThan(held, 6 * 1024 * 1024, "the producer ran ahead of the client")
        let r = try TestClient.parse(try c.readToEOF())
        XCTAssertEqual(r.body.count, 32 * 1024 * 1024)
        XCTAssertFalse(probe.cancelled.load(ordering: .relaxed))
    }

    func testAClientThatGoesAwayStopsTheProducer() throws {
        try start()
        do {
            let c = try TestClient(port: port)
            try c.send("GET /stream?kb=1000000 HTTP/1.1\r\nHost: t\r\n\r\n")  // ~1 GiB: never finished
            usleep(200_000)
            Glibc.close(c.fd)
        }
        let deadline = Date().addingTimeInterval(5)
        while !probe.cancelled.load(ordering: .relaxed) && Date() < deadline { usleep(20_000) }
        XCTAssertTrue(probe.cancelled.load(ordering: .relaxed), "the producer never learnt its client left")
        XCTAssertLessThan(probe.produced.load(ordering: .relaxed), 1_000_000 * 1024)
        // The worker is free again.
        let c = try TestClient(port: port)
        try c.send("GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
        XCTAssertEqual(try c.readResponse().text, "pong")
    }

    func testAProducerThatThrowsLeavesATruncatedBody() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send("GET /broken HTTP/1.1\r\nHost: t\r\n\r\n")
        let raw = try c.readToEOF()
        XCTAssertTrue(raw.starts(with: Array("HTTP/1.1 200 OK\r\n".utf8)))
        XCTAssertThrowsError(try TestClient.parse(raw), "a complete-looking body") { error in
            XCTAssertTrue("\(error)".contains("incomplete chunked body"), "\(error)")
        }
        XCTAssertFalse(raw.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8)))
    }

    func testHTTP10GetsACloseDelimitedBody() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send("GET /stream?kb=100 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let raw = try c.readToEOF()
        let head = String(decoding: raw.prefix(400), as: UTF8.self)
        XCTAssertTrue(head.contains("Connection: close\r\n"), head)
        XCTAssertFalse(head.contains("Transfer-Encoding"), head)
        XCTAssertFalse(head.contains("Content-Length"), head)
        guard let end = head.range(of: "\r\n\r\n") else { return XCTFail(head) }
        XCTAssertEqual(raw.count - head.utf8.distance(from: head.utf8.startIndex, to: end.upperBound), 100 * 1024)
    }

    func testHeadRunsNoProducer() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send("HEAD /stream?kb=10 HTTP/1.1\r\nHost: t\r\n\r\n")
        let r = try c.readResponse(head: true)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.header("Transfer-Encoding"), "chunked")
        XCTAssertTrue(r.body.isEmpty)
        try c.send("GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
        XCTAssertEqual(try c.readResponse().text, "pong")
        XCTAssertEqual(probe.produced.load(ordering: .relaxed), 0)
    }

    func testARouteOnTheEventLoopSendsItsStreamWhole() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send("GET /inline HTTP/1.1\r\nHost: t\r\n\r\n")
        let r = try c.readResponse()
        XCTAssertEqual(r.header("Content-Length"), "11")
        XCTAssertEqual(r.text, "inline body")
    }

    func testChunkFraming() {
        XCTAssertEqual(BodyWriter.frame(Array("hello".utf8), chunked: true), Array("5\r\nhello\r\n".utf8))
        XCTAssertEqual(BodyWriter.frame(Array(repeating: 0x61, count: 26), chunked: true).prefix(4),
                       Array("1a\r\n".utf8)[...])
        XCTAssertEqual(BodyWriter.frame(Array("raw".utf8), chunked: false), Array("raw".utf8))
    }
}
