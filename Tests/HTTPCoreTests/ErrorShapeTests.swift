import Glibc
import JSON
import XCTest
@testable import HTTPCore

/// Every error the server itself answers (event loop, server core) has the one shape `HTTPError` renders:
/// `{"error","code","suggestion","details"?,"request_id"}` with `request_id` equal to the `X-Request-Id` header, and
/// every 503 carries the configured `retryAfterSeconds` (one source).
final class ErrorShapeTests: XCTestCase {
    var server: HTTPServer?
    var port = 0

    func start(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in }) throws {
        var c = HTTPServer.Configuration()
        c.workerCount = 2
        c.eventLoopCount = 1
        c.retryAfterSeconds = 7
        configure(&c)
        var r = Router()
        r.add(.get, "/ping", placement: .eventLoop) { _ in .json(200, Array("{}".utf8)) }
        r.add(.post, "/echo") { req in Response(status: 200, body: req.body) }
        r.add(.get, "/items/:id") { req in .json(200, Array((req.pathParameters["id"] ?? "?").utf8)) }
        r.add(.get, "/slow") { _ in
            usleep(600_000)
            return .json(200, Array("{}".utf8))
        }
        r.add(.get, "/throw") { _ in throw Boom() }
        r.add(.get, "/sniffed") { _ in
            Response(status: 200, headers: ["x-content-type-options": "nosniff"], body: Array("{}".utf8))
        }
        r.add(.get, "/unavailable") { _ in
            throw HTTPError.serviceUnavailable(message: "Down.", suggestion: "Later.")
        }
        r.add(.get, "/details") { _ in
            throw HTTPError(status: 400, code: "VALIDATION_ERROR", message: "Validation error", suggestion: "Fix it.",
                            details: [ErrorDetail(path: ["a", "0"], message: "Required"),
                                      ErrorDetail(path: ["jws"], message: "bad", step: "signature")])
        }
        (server, port) = try startLiveServer(c, router: r)
    }

    /// Asserts the one error shape and returns the parsed body.
    @discardableResult
    func assertShape(
        _ r: TestClient.Response, _ status: Int, _ code: String, file: StaticString = #filePath, line: UInt = #line
    ) throws -> JSONObject {
        XCTAssertEqual(r.status, status, r.text, file: file, line: line)
        XCTAssertEqual(r.header("Content-Type"), "application/json", file: file, line: line)
        guard case .object(let body) = try JSONParser.parse(r.body) else {
            XCTFail("not an object: \(r.text)", file: file, line: line)
            return JSONObject()
        }
        XCTAssertEqual(body["code"]?.stringValue, code, file: file, line: line)
        XCTAssertFalse(body["error"]?.stringValue?.isEmpty ?? true, "error", file: file, line: line)
        XCTAssertFalse(body["suggestion"]?.stringValue?.isEmpty ?? true, "suggestion", file: file, line: line)
        let id = try XCTUnwrap(r.header("X-Request-Id"), file: file, line: line)
        XCTAssertEqual(body["request_id"]?.stringValue, id, "request_id is the X-Request-Id header", file: file, line: line)
        XCTAssertEqual(Set(body.keys).subtracting(["error", "code", "suggestion", "details", "request_id"]), [],
                       file: file, line: line)
        if status == 503 { XCTAssertEqual(r.header("Retry-After"), "7", "the configured Retry-After", file: file, line: line) }
        assertNosniff(r, file: file, line: line)
        return body
    }

    /// Exactly one `X-Content-Type-Options: nosniff`.
    func assertNosniff(_ r: TestClient.Response, file: StaticString = #filePath, line: UInt = #line) {
        let values = r.headers.filter { $0.0.lowercased() == "x-content-type-options" }.map(\.1)
        XCTAssertEqual(values, ["nosniff"], "\(r.status)", file: file, line: line)
    }

    func testEveryResponseIsNosniffIncludingFramingErrorsBeforeRouting() throws {
        try start { $0.maxBodyBytes = 16 }
        let ok = try TestClient(port: port)
        try ok.send("GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
        let pong = try ok.readResponse()
        XCTAssertEqual(pong.status, 200)
        assertNosniff(pong)
        // A handler's own value is not sent twice.
        try ok.send("GET /sniffed HTTP/1.1\r\nHost: t\r\n\r\n")
        let own = try ok.readResponse()
        XCTAssertEqual(own.status, 200)
        assertNosniff(own)
        let ambiguous = try TestClient(port: port)
        try ambiguous.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
        try assertShape(try ambiguous.readResponse(), 400, "BAD_REQUEST")
        let unknownCoding = try TestClient(port: port)
        try unknownCoding.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
        try assertShape(try unknownCoding.readResponse(), 501, "NOT_IMPLEMENTED")
    }

    func testRoutingErrorsOfTheEventLoop() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send("GET /nope HTTP/1.1\r\nHost: t\r\nX-Request-Id: mine-1\r\n\r\n")
        let notFound = try c.readResponse()
        XCTAssertEqual(try assertShape(notFound, 404, "NOT_FOUND")["request_id"], "mine-1")
        try c.send("DELETE /echo HTTP/1.1\r\nHost: t\r\n\r\n")
        let notAllowed = try c.readResponse()
        try assertShape(notAllowed, 405, "METHOD_NOT_ALLOWED")
        XCTAssertEqual(notAllowed.header("Allow"), "POST")
        try c.send("GET /items/a%00b HTTP/1.1\r\nHost: t\r\n\r\n")
        try assertShape(try c.readResponse(), 400, "BAD_REQUEST")
    }

    func testFramingErrors413And431AndTimeout408() throws {
        try start {
            $0.maxBodyBytes = 16
            $0.maxHeaderBytes = 256
            $0.headerTimeout = .milliseconds(300)
        }
        let big = try TestClient(port: port)
        try big.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 64\r\n\r\n" + String(repeating: "b", count: 64))
        try assertShape(try big.readResponse(), 413, "PAYLOAD_TOO_LARGE")
        let headers = try TestClient(port: port)
        try headers.send("GET /ping HTTP/1.1\r\nHost: t\r\nX-Fill: \(String(repeating: "h", count: 512))\r\n\r\n")
        try assertShape(try headers.readResponse(), 431, "HEADERS_TOO_LARGE")
        let slow = try TestClient(port: port)
        try slow.send("GET /ping HTTP/1.1\r\nHost: t\r\n")
        try assertShape(try slow.readResponse(), 408, "REQUEST_TIMEOUT")
    }

    func testBusy503AndConnectionLimit503CarryTheConfiguredRetryAfter() throws {
        try start {
            $0.workerCount = 1
            $0.queueDepth = 1
            $0.maxConnections = 4
        }
        let clients = try (0..<3).map { _ in try TestClient(port: port) }
        for c in clients {
            try c.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
            usleep(100_000)
        }
        // The fifth connection is over the limit while the three are open (plus this one).
        let fourth = try TestClient(port: port)
        let fifth = try TestClient(port: port)
        try assertShape(try fifth.readResponse(), 503, "OVERLOADED")
        _ = fourth
        let responses = try clients.map { try $0.readResponse() }
        XCTAssertEqual(responses.map(\.status).sorted(), [200, 200, 503])
        try assertShape(try XCTUnwrap(responses.first { $0.status == 503 }), 503, "OVERLOADED")
    }

    func testHandlerTimeout503() throws {
        try start { $0.handlerTimeout = .milliseconds(150) }
        let c = try TestClient(port: port)
        try c.send("GET /slow HTTP/1.1\r\nHost: t\r\nX-Request-Id: late-1\r\n\r\n")
        XCTAssertEqual(try assertShape(try c.readResponse(), 503, "HANDLER_TIMEOUT")["request_id"], "late-1")
    }

    func testServerCoreRendersThrownErrors() throws {
        try start()
        let c = try TestClient(port: port)
        try c.send("GET /throw HTTP/1.1\r\nHost: t\r\n\r\n")
        let failed = try c.readResponse()
        let body = try assertShape(failed, 500, "INTERNAL_ERROR")
        XCTAssertFalse(failed.text.contains("Boom"), "no internals")
        XCTAssertNil(body["details"])
        try c.send("GET /unavailable HTTP/1.1\r\nHost: t\r\n\r\n")
        try assertShape(try c.readResponse(), 503, "SERVICE_UNAVAILABLE")
        try c.send("GET /details HTTP/1.1\r\nHost: t\r\n\r\n")
        let details = try assertShape(try c.readResponse(), 400, "VALIDATION_ERROR")
        XCTAssertEqual(details["details"], [
            ["path": ["a", "0"], "message": "Required"],
            ["path": ["jws"], "message": "bad", "step": "signature"],
        ])
    }
}
