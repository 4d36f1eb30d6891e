import Foundation
import Glibc
import JSON
import Synchronization
import XCTest
@testable import HTTPCore

struct Boom: Error {}

final class LiveServerTests: XCTestCase {
    var server: HTTPServer?
    var port = 0
    let log = LogLines()

    func start(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in }) throws {
        var c = HTTPServer.Configuration()
        c.workerCount = 4
        configure(&c)
        var r = Router()
        r.add(.get, "/ping", placement: .eventLoop) { _ in .json(200, Array(#"{"pong":true}"#.utf8)) }
        r.add(.get, "/items/:id") { req in .json(200, Array((req.pathParameters["id"] ?? "?").utf8)) }
        r.add(.post, "/echo") { req in Response(status: 200, body: req.body) }
        r.add(.get, "/slow") { req in
            let ms = req.queryItems().first { $0.name == "ms" }.flatMap { Int($0.value) } ?? 100
            usleep(UInt32(ms * 1000))
            return .json(200, Array("slow".utf8))
        }
        r.add(.get, "/throw") { _ in throw Boom() }
        (server, port) = try startLiveServer(c, router: r, accessLog: log)
        XCTAssertGreaterThan(port, 0)
    }

    func get(_ path: String, _ extra: String = "") -> String {
        "GET \(path) HTTP/1.1\r\nHost: test\r\n\(extra)\r\n"
    }

    func testKeepAliveReusesOneConnection() throws {
        try start()
        let c = try TestClient(port: port)
        for id in ["a", "b", "c"] {
            try c.send(get("/items/\(id)"))
            let r = try c.readResponse()
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.text, id)
            XCTAssertNil(r.header("Connection"))
            XCTAssertNotNil(r.header("Date"))
            XCTAssertEqual(r.header("Content-Length"), "1")
        }
        XCTAssertEqual(server?.connectionCount, 1)
    }

    /// Whichever loop the listener wakes, accepted connections go to the loop with the fewest: 32 connections
    /// opened at once on 2 loops end 16 and 16 (before: the first idle loop in the kernel's wait queue took most).
    func testConnectionsSpreadEvenlyOverTheLoops() throws {
        try start { $0.eventLoopCount = 2 }
        var clients = try (0..<32).map { _ in try TestClient(port: port) }
        for (i, c) in clients.enumerated() {
            try c.send(get("/items/\(i)"))
            XCTAssertEqual(try c.readResponse().text, "\(i)")
        }
        XCTAssertEqual(server?.connectionsPerLoop, [16, 16])
        XCTAssertEqual(server?.connectionCount, 32)
        clients = []
        for _ in 0..<100 where server?.connectionsPerLoop != [0, 0] { usleep(20_000) }
        XCTAssertEqual(server?.connectionsPerLoop, [0, 0])
        XCTAssertEqual(server?.connectionCount, 0)
    }

    func testPipelinedRequestsAreAnsweredInOrder() throws {
        try start()
        let c = try TestClient(port: port)
        let batch = get("/slow?ms=80") + get("/ping") + get("/items/2") + "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nfour"
            + get("/items/last")
        try c.send(batch)
        let bodies = try (0..<5).map { _ in try c.readResponse().text }
        XCTAssertEqual(bodies, ["slow", #"{"pong":true}"#, "2", "four", "last"])
    }

    func testSlowlorisIsCutOffAtTheHeaderDeadline() throws {
        try start { $0.headerTimeout = .milliseconds(400) }
        let c = try TestClient(port: port)
        let began = Date()
        try c.send("GET /ping HTTP/1.1\r\nHost: t\r\n")
        // Trickle one header byte every 100 ms: each byte arrives well within any per-read timeout.
        var cutOff = false
        for byte in Array("X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".utf8) {
            usleep(100_000)
            do { try c.send([byte]) } catch { cutOff = true; break }
            if Date().timeIntervalSince(began) > 1.2 { break }
        }
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 408)
        XCTAssertEqual(r.header("Connection"), "close")
        XCTAssertTrue(c.isClosedByPeer())
        XCTAssertLessThan(Date().timeIntervalSince(began), 1.5, "cut off near the 0.4 s deadline (sent=\(cutOff))")
    }

    func testBodyLimitIs413AndClose() throws {
        try start { $0.maxBodyBytes = 1024 }
        let ok = try TestClient(port: port)
        try ok.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1024\r\n\r\n" + String(repeating: "b", count: 1024))
        XCTAssertEqual(try ok.readResponse().body.count, 1024)
        let c = try TestClient(port: port)
        try c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2048\r\n\r\n" + String(repeating: "b", count: 2048))
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 413)
        XCTAssertEqual(r.header("Connection"), "close")
        XCTAssertTrue(r.text.contains(#""code":"PAYLOAD_TOO_LARGE""#))
        XCTAssertTrue(c.isClosedByPeer())
    }

    func testTenThousandRequestsLeakNoDescriptors() throws {
        try start()
        let before = openFDCount()
        var statuses: [Int: Int] = [:]
        for connection in 0..<1000 {
            let c = try TestClient(port: port)
            for i in 0..<10 {
                let last = i == 9 && connection % 2 == 0
                try c.send(get(i % 2 == 0 ? "/ping" : "/items/\(i)", last ? "Connection: close\r\n" : ""))
                statuses[try c.readResponse().status, default: 0] += 1
            }
        }
        XCTAssertEqual(statuses, [200: 10_000])
        for _ in 0..<100 where server?.connectionCount != 0 { usleep(20_000) }
        XCTAssertEqual(server?.connectionCount, 0)
        XCTAssertEqual(openFDCount(), before, "file descriptors leaked")
    }

    func testShutdownLetsAnInFlightRequestFinish() throws {
        try start()
        let idle = try TestClient(port: port)
        try idle.send(get("/ping"))
        XCTAssertEqual(try idle.readResponse().status, 200)
        let c = try TestClient(port: port)
        try c.send(get("/slow?ms=500"))
        usleep(150_000)
        let done = DispatchSemaphore(value: 0)
        let s = try XCTUnwrap(server)
        let began = Date()
        Thread { s.shutdown(gracePeriod: .seconds(5)); done.signal() }.start()
        usleep(50_000)
        XCTAssertTrue(s.isDraining)
        XCTAssertTrue(idle.isClosedByPeer(), "idle keep-alive connections close at once")
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.text, "slow")
        XCTAssertEqual(r.header("Connection"), "close")
        XCTAssertEqual(done.wait(timeout: .now() + 3), .success)
        XCTAssertLessThan(Date().timeIntervalSince(began), 2)
        XCTAssertThrowsError(try TestClient(port: port), "no longer accepting")
        server = nil
    }

    func testFullQueueAnswers503WithRetryAfter() throws {
        try start {
            $0.workerCount = 1
            $0.queueDepth = 1
        }
        let clients = try (0..<3).map { _ in try TestClient(port: port) }
        // Spaced so the lone worker has surely taken the first job before the second is queued.
        for c in clients {
            try c.send(get("/slow?ms=600"))
            usleep(100_000)
        }
        let responses = try clients.map { try $0.readResponse() }
        XCTAssertEqual(responses.map(\.status).sorted(), [200, 200, 503])
        let busy = try XCTUnwrap(responses.first { $0.status == 503 })
        XCTAssertEqual(busy.header("Retry-After"), "1")
        XCTAssertTrue(busy.text.contains(#""code":"OVERLOADED""#))
    }

    func testThrowingHandlerIs500WithRequestID() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send(get("/throw", "X-Request-Id: test-42\r\n"))
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 500)
        XCTAssertEqual(r.header("X-Request-Id"), "test-42")
        let body = try JSONParser.parse(Array(r.text.utf8))
        XCTAssertEqual(body["code"]?.stringValue, "INTERNAL_ERROR")
        XCTAssertEqual(body["error"]?.stringValue, "Internal server error.")
        XCTAssertEqual(body["suggestion"]?.stringValue, "Retry later; if it persists, report the request_id to the operator.")
        XCTAssertEqual(body["request_id"]?.stringValue, "test-42")
        XCTAssertFalse(r.text.contains("Boom"), "no internals in the body")
        try c.send(get("/items/again"))
        XCTAssertEqual(try c.readResponse().text, "again", "connection stays usable")
        // The worker logs after handing the response back, so the line may trail the response.
        let logged = { self.log.all.contains { $0.contains(#""status":500"#) && $0.contains(#""error":"Boom""#) } }
        for _ in 0..<50 where !logged() { usleep(10_000) }
        XCTAssertTrue(logged())
    }

    func testRequestIDIsGeneratedWhenMissingOrUnsafe() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send(get("/ping", "X-Request-Id: bad id\"\r\n"))
        let a = try XCTUnwrap(try c.readResponse().header("X-Request-Id"))
        try c.send(get("/ping"))
        let b = try XCTUnwrap(try c.readResponse().header("X-Request-Id"))
        XCTAssertNotEqual(a, "bad id\"")
        XCTAssertFalse(a.isEmpty)
        XCTAssertNotEqual(a, b)
    }

    func testAccessLogLineIsJSONWithTemplateAndID() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send(get("/items/secret-key", "X-Request-Id: log-1\r\n"))
        _ = try c.readResponse()
        for _ in 0..<50 where !log.all.contains(where: { $0.contains("log-1") }) { usleep(10_000) }
        let line = try XCTUnwrap(log.all.first { $0.contains("log-1") })
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        XCTAssertEqual(object["method"] as? String, "GET")
        XCTAssertEqual(object["path"] as? String, "/items/:id")
        XCTAssertEqual(object["status"] as? Int, 200)
        XCTAssertEqual(object["bytes"] as? Int, 10)
        XCTAssertEqual(object["request_id"] as? String, "log-1")
        XCTAssertNotNil(object["duration_ms"])
        XCTAssertFalse(line.contains("secret-key"), "raw paths are not logged")
    }

    func testHeadSendsLengthButNoBody() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send("HEAD /items/abc HTTP/1.1\r\nHost: t\r\n\r\n")
        let r = try c.readResponse(head: true)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.header("Content-Length"), "3")
        try c.send(get("/items/next"))
        XCTAssertEqual(try c.readResponse().text, "next", "no stray body bytes were sent")
    }

    func testExpectContinueThenBody() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        XCTAssertEqual(try c.readResponse().status, 100)
        try c.send("hello")
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.text, "hello")
    }

    func testChunkedUpload() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
        usleep(20_000)
        try c.send("2\r\nde\r\n0\r\n\r\n")
        XCTAssertEqual(try c.readResponse().text, "abcde")
    }

    func testBadBytesCloseOnlyThatClient() throws {
        try start()
        let good = try TestClient(port: port)
        try good.send(get("/ping"))
        XCTAssertEqual(try good.readResponse().status, 200)
        let bad = try TestClient(port: port)
        try bad.send("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx")
        let r = try bad.readResponse()
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.header("Connection"), "close")
        XCTAssertTrue(r.text.contains(#""code":"BAD_REQUEST""#))
        XCTAssertTrue(bad.isClosedByPeer())
        try good.send(get("/items/still"))
        XCTAssertEqual(try good.readResponse().text, "still")
    }

    func testNotFoundAndMethodNotAllowedAreJSON() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send(get("/nope"))
        let a = try c.readResponse()
        XCTAssertEqual(a.status, 404)
        XCTAssertTrue(a.text.contains(#""code":"NOT_FOUND""#))
        XCTAssertEqual(a.header("Content-Type"), "application/json")
        try c.send("DELETE /echo HTTP/1.1\r\nHost: t\r\n\r\n")
        let b = try c.readResponse()
        XCTAssertEqual(b.status, 405)
        XCTAssertEqual(b.header("Allow"), "POST")
        // An unrouted but well-formed method (RFC 9110's TRACE) is 405 with Allow, not 501.
        try c.send("TRACE /echo HTTP/1.1\r\nHost: t\r\n\r\n")
        let trace = try c.readResponse()
        XCTAssertEqual(trace.status, 405)
        XCTAssertEqual(trace.header("Allow"), "POST")
        try c.send(get("/items/a%00b"))
        XCTAssertEqual(try c.readResponse().status, 400)
    }

    func testHTTP10ClosesWithoutKeepAlive() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send("GET /ping HTTP/1.0\r\n\r\n")
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.header("Connection"), "close")
        XCTAssertTrue(c.isClosedByPeer())
        let k = try TestClient(port: port)
        try k.send("GET /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(try k.readResponse().header("Connection"), "keep-alive")
        try k.send("GET /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(try k.readResponse().status, 200)
    }

    func testConnectionLimitAnswers503() throws {
        try start { $0.maxConnections = 2 }
        let a = try TestClient(port: port), b = try TestClient(port: port)
        for c in [a, b] {
            try c.send(get("/ping"))
            XCTAssertEqual(try c.readResponse().status, 200)
        }
        let third = try TestClient(port: port)
        let r = try third.readResponse()
        XCTAssertEqual(r.status, 503)
        XCTAssertEqual(r.header("Retry-After"), "1")
        XCTAssertTrue(third.isClosedByPeer())
    }

    func testHandlerDeadlineAnswers503() throws {
        try start { $0.handlerTimeout = .milliseconds(200) }
        let c = try TestClient(port: port)
        let began = Date()
        try c.send(get("/slow?ms=1500"))
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 503)
        XCTAssertTrue(r.text.contains(#""code":"HANDLER_TIMEOUT""#))
        XCTAssertLessThan(Date().timeIntervalSince(began), 1.0)
        XCTAssertTrue(c.isClosedByPeer())
    }

    func testIdleKeepAliveTimeoutClosesSilently() throws {
        try start { $0.idleTimeout = .milliseconds(200) }
        let c = try TestClient(port: port)
        try c.send(get("/ping"))
        XCTAssertEqual(try c.readResponse().status, 200)
        usleep(600_000)
        XCTAssertTrue(c.isClosedByPeer())
    }

    func testNothingIsAnsweredAfterConnectionClose() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send(get("/items/1") + get("/items/2", "Connection: close\r\n") + get("/items/3"))
        XCTAssertEqual(try c.readResponse().text, "1")
        let second = try c.readResponse()
        XCTAssertEqual(second.text, "2")
        XCTAssertEqual(second.header("Connection"), "close")
        XCTAssertTrue(c.isClosedByPeer(), "the third request is never answered")
    }

    func testTwoEventLoopsServeConcurrentClients() throws {
        try start { $0.eventLoopCount = 2 }
        let group = DispatchGroup()
        let failures = Mutex(0)
        let port = self.port
        for worker in 0..<8 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let c = try TestClient(port: port)
                    for i in 0..<50 {
                        try c.send("GET /items/\(worker)-\(i) HTTP/1.1\r\nHost: t\r\n\r\n")
                        if try c.readResponse().text != "\(worker)-\(i)" { failures.withLock { $0 += 1 } }
                    }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 20), .success)
        XCTAssertEqual(failures.withLock { $0 }, 0)
    }

    func testRandomGarbageNeverHurtsOtherClients() throws {
        try start { $0.headerTimeout = .milliseconds(300) }
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            seed ^= seed << 13
            seed ^= seed >> 7
            seed ^= seed << 17
            return seed
        }
        let prefixes = ["", "GET / HTTP/1.1\r\n", "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
                        "GET /items/x HTTP/1.1\r\nHost: t\r\nContent-Length: "]
        var clients: [TestClient] = []
        for i in 0..<200 {
            let c = try TestClient(port: port, timeout: 2)
            var bytes = Array(prefixes[i % prefixes.count].utf8)
            for _ in 0..<(Int(next() % 300)) { bytes.append(UInt8(truncatingIfNeeded: next())) }
            try? c.send(bytes)
            clients.append(c)
        }
        let good = try TestClient(port: port)
        try good.send(get("/items/ok"))
        XCTAssertEqual(try good.readResponse().text, "ok")
        clients.removeAll()
        try good.send(get("/items/again"))
        XCTAssertEqual(try good.readResponse().text, "again")
        for _ in 0..<500 where server?.connectionCount != 1 { usleep(20_000) }
        XCTAssertEqual(server?.connectionCount, 1, "every garbage connection was closed")
    }
}
