import Foundation
import Synchronization
import JSON
import XCTest
@testable import HTTPCore

/// Collects observer records from the server's threads.
final class Records: Sendable {
    private let items = Mutex<[RequestRecord]>([])
    func append(_ r: RequestRecord) { items.withLock { $0.append(r) } }
    var all: [RequestRecord] { items.withLock { $0 } }
}

/// The generic `admission` and `observer` hooks of `HTTPServer`.
final class ServerHooksTests: XCTestCase {
    var server: HTTPServer?

    func start(
        admission: (@Sendable (Request) -> HTTPError?)? = nil, observer: (@Sendable (RequestRecord) -> Void)? = nil
    ) throws -> Int {
        var c = HTTPServer.Configuration()
        c.workerCount = 2
        c.eventLoopCount = 1
        var r = Router()
        r.add(.get, "/inline", placement: .eventLoop) { _ in .json(200, Array("inline".utf8)) }
        r.add(.get, "/items/:id") { req in .json(200, Array((req.pathParameters["id"] ?? "?").utf8)) }
        r.add(.post, "/items/:id") { _ in Response(status: 201, body: Array("created".utf8)) }
        let live = try startLiveServer(c, router: r, admission: admission, observer: observer)
        server = live.server
        return live.port
    }

    func testAdmissionSeesRoutingAndItsResponseReplacesTheHandler() throws {
        let seen = Mutex<[String]>([])
        let port = try start(admission: { request in
            seen.withLock { $0.append("\(request.method.rawValue) \(request.routeTemplate) id=\(request.pathParameters["id"] ?? "-")") }
            guard request.pathParameters["id"] == "blocked" else { return nil }
            return HTTPError(status: 429, code: "RATE_LIMITED", message: "Too many requests.", suggestion: "Later.",
                             headers: ["Retry-After": "7"])
        })
        let c = try TestClient(port: port)
        try c.send("GET /items/ok HTTP/1.1\r\nHost: t\r\n\r\n")
        let ok = try c.readResponse()
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(ok.text, "ok")
        try c.send("POST /items/blocked HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi")
        let blocked = try c.readResponse()
        XCTAssertEqual(blocked.status, 429)
        XCTAssertEqual(blocked.header("Retry-After"), "7")
        let body = try JSONParser.parse(Array(blocked.text.utf8))
        XCTAssertEqual(body["error"]?.stringValue, "Too many requests.")
        XCTAssertEqual(body["code"]?.stringValue, "RATE_LIMITED")
        XCTAssertEqual(body["suggestion"]?.stringValue, "Later.")
        XCTAssertEqual(body["request_id"]?.stringValue, blocked.header("X-Request-Id"), "rendered with the request id")
        XCTAssertNil(blocked.header("Connection"), "a rejection keeps the connection alive")
        try c.send("GET /inline HTTP/1.1\r\nHost: t\r\n\r\n")
        XCTAssertEqual(try c.readResponse().text, "inline")
        try c.send("GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\n")
        XCTAssertEqual(try c.readResponse().status, 404)
        XCTAssertEqual(seen.withLock { $0 }, ["GET /items/:id id=ok", "POST /items/:id id=blocked", "GET /inline id=-"],
                       "called after routing, for matched routes only (404s never reach it)")
    }

    func testObserverGetsOneRecordPerResponse() throws {
        let records = Records()
        let port = try start(admission: { $0.pathParameters["id"] == "no" ? HTTPError(status: 429, code: "RATE_LIMITED", message: "m", suggestion: "s") : nil },
                             observer: { records.append($0) })
        let c = try TestClient(port: port)
        for (i, request) in ["GET /items/abc", "GET /inline", "GET /missing", "GET /items/no", "DELETE /inline"].enumerated() {
            try c.send("\(request) HTTP/1.1\r\nHost: t\r\nX-Request-Id: r-\(i)\r\n\r\n")
            _ = try c.readResponse()
            // A worker records after handing its response to the loop: wait, so the order is the request order.
            for _ in 0..<200 where records.all.count <= i { usleep(5_000) }
        }
        try c.send("BREWCOFFEEWITHOATMILK /pot HTTP/1.1\r\nHost: t\r\n\r\n")  // 21-byte method: 501 and close
        XCTAssertEqual(try c.readResponse().status, 501)
        for _ in 0..<100 where records.all.count < 6 { usleep(10_000) }
        let all = records.all
        XCTAssertEqual(all.map(\.routeTemplate), ["/items/:id", "/inline", "<unmatched>", "/items/:id", "<unmatched>", "-"])
        XCTAssertEqual(all.map(\.method), ["GET", "GET", "GET", "GET", "DELETE", "-"])
        XCTAssertEqual(all.map(\.status), [200, 200, 404, 429, 405, 501])
        XCTAssertEqual(all.first?.bytes, 3)
        XCTAssertEqual(all.first?.remoteAddress, "127.0.0.1")
        XCTAssertEqual(all.prefix(5).map(\.requestID), ["r-0", "r-1", "r-2", "r-3", "r-4"])
        for r in all { XCTAssertLessThan(r.durationNanoseconds, 2_000_000_000) }
    }

    /// A route's inline answer replaces its handler; nil hands the request to the handler on the pool. Either way
    /// one observer record, with the route's template.
    func testInlineAnswersAndNilFallsBackToThePool() throws {
        var c = HTTPServer.Configuration()
        c.workerCount = 2
        c.eventLoopCount = 1
        var r = Router()
        let calls = Mutex<[String]>([])
        r.add(.get, "/users/:id", inline: { request in
            let id = request.pathParameters["id"] ?? "?"
            calls.withLock { $0.append("inline " + id) }
            return id == "cached" ? .json(200, Array("from memory".utf8)) : nil
        }) { request in
            let id = request.pathParameters["id"] ?? "?"
            calls.withLock { $0.append("handler " + id) }
            return .json(200, Array("from the pool".utf8))
        }
        let records = Records()
        let live = try startLiveServer(c, router: r, observer: { records.append($0) })
        server = live.server
        let client = try TestClient(port: live.port)
        try client.send("GET /users/cached HTTP/1.1\r\nHost: t\r\n\r\n")
        let inline = try client.readResponse()
        XCTAssertEqual(inline.status, 200)
        XCTAssertEqual(inline.text, "from memory")
        XCTAssertEqual(inline.header("Content-Type"), "application/json")
        try client.send("HEAD /users/cached HTTP/1.1\r\nHost: t\r\n\r\n")
        let head = try client.readResponse(head: true)
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.header("Content-Length"), "11")
        XCTAssertEqual(head.text, "")
        try client.send("GET /users/other HTTP/1.1\r\nHost: t\r\n\r\n")
        let pooled = try client.readResponse()
        XCTAssertEqual(pooled.status, 200)
        XCTAssertEqual(pooled.text, "from the pool")
        XCTAssertEqual(calls.withLock { $0 }, ["inline cached", "inline cached", "inline other", "handler other"])
        let seen = records.all
        XCTAssertEqual(seen.map(\.routeTemplate), ["/users/:id", "/users/:id", "/users/:id"])
        XCTAssertEqual(seen.map(\.status), [200, 200, 200])
    }
}
