import JSON
import XCTest
@testable import HTTPCore

final class RouterTests: XCTestCase {
    func makeRouter() -> Router {
        var r = Router()
        r.add(.get, "/v1/receipts/:publicKey") { _ in .json(200, []) }
        r.add(.post, "/v1/receipts/:publicKey") { _ in .json(201, []) }
        r.add(.get, "/v1/subscriptions/:publicKey/:user") { _ in .json(200, []) }
        r.add(.get, "/v1/subscriptions/:publicKey/current") { _ in .json(200, []) }
        r.add(.delete, "/v1/things") { _ in .json(204, []) }
        r.add(.get, "/") { _ in .json(200, []) }
        return r
    }

    func testParametersArePercentDecoded() {
        guard case .found(let route, let params) = makeRouter().match(.get, "/v1/receipts/ab%20c%C3%A9") else {
            return XCTFail("no match")
        }
        XCTAssertEqual(route.template, "/v1/receipts/:publicKey")
        XCTAssertEqual(params, ["publicKey": "ab cé"])
    }

    func testLiteralBeatsParameter() {
        guard case .found(let route, let params) = makeRouter().match(.get, "/v1/subscriptions/k/current") else {
            return XCTFail("no match")
        }
        XCTAssertEqual(route.template, "/v1/subscriptions/:publicKey/current")
        XCTAssertEqual(params, ["publicKey": "k"])
        guard case .found(let other, let p2) = makeRouter().match(.get, "/v1/subscriptions/k/u1") else {
            return XCTFail("no match")
        }
        XCTAssertEqual(other.template, "/v1/subscriptions/:publicKey/:user")
        XCTAssertEqual(p2, ["publicKey": "k", "user": "u1"])
    }

    func testHeadUsesGetAndMethodNotAllowedListsMethods() {
        guard case .found(let route, _) = makeRouter().match(.head, "/v1/receipts/x") else { return XCTFail("no match") }
        XCTAssertEqual(route.method, .get)
        guard case .methodNotAllowed(let allow) = makeRouter().match(.put, "/v1/receipts/x") else {
            return XCTFail("expected 405")
        }
        XCTAssertEqual(allow, ["GET", "HEAD", "POST"])
        guard case .methodNotAllowed(let allow2) = makeRouter().match(.get, "/v1/things") else { return XCTFail("expected 405") }
        XCTAssertEqual(allow2, ["DELETE"])
    }

    func testNotFoundAndBadSegments() {
        let r = makeRouter()
        if case .notFound = r.match(.get, "/v1/receipts") {} else { XCTFail("expected 404") }
        if case .notFound = r.match(.get, "/v1/receipts/a/b") {} else { XCTFail("expected 404") }
        if case .notFound = r.match(.get, "/v1/receipts/a/") {} else { XCTFail("expected 404 for trailing slash") }
        if case .found = r.match(.get, "/") {} else { XCTFail("root should match") }
        if case .found(_, let parameters) = r.match(.get, "/v1/receipts/a%2Fb") {
            XCTAssertEqual(parameters["publicKey"], "a/b", "an encoded slash is data inside one segment")
        } else {
            XCTFail("expected a match for an encoded slash")
        }
        for bad in ["/v1/receipts/a%00", "/v1/receipts/%zz", "/v1/receipts/%C3", "/v1/receipts/%4"] {
            if case .badPath = r.match(.get, bad) {} else { XCTFail("expected 400 for \(bad)") }
        }
    }

    func testQueryItemsDecode() {
        let request = Request(method: .get, path: "/", query: "a=1&b=x%20y&c=p+q&empty=&flag&bad=%zz")
        let items = request.queryItems()
        XCTAssertEqual(items.map(\.name), ["a", "b", "c", "empty", "flag"])
        XCTAssertEqual(items.map(\.value), ["1", "x y", "p q", "", ""])
    }

    func testHeadersAreCaseInsensitiveAndOrdered() {
        var h: HTTPHeaders = ["Content-Type": "a", "X-One": "1"]
        h.add("x-one", "2")
        XCTAssertEqual(h["CONTENT-TYPE"], "a")
        XCTAssertEqual(h.values(for: "X-ONE"), ["1", "2"])
        h.set("X-One", "3")
        XCTAssertEqual(h.values(for: "x-one"), ["3"])
        h["content-type"] = nil
        XCTAssertEqual(h.map(\.name), ["X-One"])
        XCTAssertFalse(HTTPHeaders.equalsIgnoringASCIICase("a-b", "a\rb"))
        XCTAssertFalse(HTTPHeaders.equalsIgnoringASCIICase("[", "{"))
    }

    func testResponseEncodingHasFramingAndDropsUnsafeHeaders() {
        var out: [UInt8] = []
        var headers: HTTPHeaders = ["X-Ok": "v", "X-Bad": "a\r\nInjected: 1", "Content-Length": "999"]
        headers.add("Bad Name", "x")
        ResponseEncoder.encode(.json(200, Array("{}".utf8), headers: headers), headRequest: false, requestID: "rid",
                               connection: .close, date: Array("DATE".utf8), into: &out)
        XCTAssertEqual(String(decoding: out, as: UTF8.self),
                       "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nDate: DATE\r\nX-Request-Id: rid\r\nX-Content-Type-Options: nosniff\r\n"
                       + "Connection: close\r\n"
                       + "X-Ok: v\r\nContent-Type: application/json\r\n\r\n{}")
        out = []
        ResponseEncoder.encode(.json(200, Array("{}".utf8)), headRequest: true, requestID: "", connection: .keepAlive10,
                               date: Array("D".utf8), into: &out)
        XCTAssertEqual(String(decoding: out, as: UTF8.self),
                       "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nDate: D\r\nX-Content-Type-Options: nosniff\r\nConnection: keep-alive\r\n"
                       + "Content-Type: application/json\r\n\r\n")
    }

    func testDateFormatAndRequestIDSanity() {
        XCTAssertEqual(String(decoding: DateCache.format(784111777), as: UTF8.self), "Sun, 06 Nov 1994 08:49:37 GMT")
        XCTAssertTrue(RequestID.isSane("abc-123_x.y:z"))
        XCTAssertFalse(RequestID.isSane(""))
        XCTAssertFalse(RequestID.isSane("a\"b"))
        XCTAssertFalse(RequestID.isSane(String(repeating: "a", count: 129)))
    }

    func testSplitMatchesCharacterSplitting() {
        for path in ["/", "", "/v1", "/v1/", "//", "/v1//x/", "v1/x", "/v1/receipts/pk_abc/user%2F1", "/é/ü", "/a/b/c/d/e"] {
            let trimmed = path.hasPrefix("/") ? path.dropFirst() : path[...]
            XCTAssertEqual(Router.split(path), trimmed.split(separator: "/", omittingEmptySubsequences: false), path)
        }
    }

    func testParametersWithoutEscapesAreTakenVerbatim() {
        var r = Router()
        r.add(.get, "/v1/subscriptions/:publicKey/:userId") { _ in Response(status: 200) }
        guard case .found(_, let parameters) = r.match(.get, "/v1/subscriptions/pk_live_1/user-42.x") else {
            return XCTFail("expected a match")
        }
        XCTAssertEqual(parameters, ["publicKey": "pk_live_1", "userId": "user-42.x"])
    }

    func testLogDecimalsKeepThreeFractionDigits() {
        func millis(_ whole: UInt64, _ thousandths: UInt64) -> String {
            var out: [UInt8] = []
            ServerCore.appendMillis(whole: whole, thousandths: thousandths, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        XCTAssertEqual(millis(1, 5), "1.005")
        XCTAssertEqual(millis(0, 120), "0.120")
        XCTAssertEqual(millis(1795308354, 999), "1795308354.999")
    }

    func testByteFormattingMatchesStringFormatting() {
        for value in [0, 1, 9, 10, 99, 100, 12_345, Int(Int32.max), -7, Int.max, Int.min] {
            var out: [UInt8] = []
            out.appendDecimal(value)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(value))
        }
        for value: UInt64 in [0, 1, 9_999_999_999_999_999, 10_000_000_000_000_000, 12_345_678_901_234_567_890, .max] {
            var out: [UInt8] = []
            out.appendDecimal(value)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(value))
            out = []
            out.appendHex(value)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(value, radix: 16))
        }
    }

    func testGeneratedRequestIDsArePrefixAndCounter() {
        let core = ServerCore(configuration: .init(), router: Router(), accessLog: nil)
        let first = core.nextRequestID(), second = core.nextRequestID()
        XCTAssertEqual(first.count, 14)  // 12 hex digits, "-", "1"
        XCTAssertEqual(first.dropLast(), second.dropLast())
        XCTAssertTrue(first.hasSuffix("-1"))
        XCTAssertTrue(second.hasSuffix("-2"))
        XCTAssertTrue(RequestID.isSane(first))
    }

    func testErrorBodyShapeIsRenderedByHTTPErrorOnly() throws {
        let error = HTTPError(
            status: 400, code: "VALIDATION_ERROR", message: "No \"x\"\n", suggestion: "s",
            details: [ErrorDetail(path: ["a", "0"], message: "m"), ErrorDetail(path: ["jws"], message: "r", step: "chain")])
        let r = error.response(requestID: "rid-1", retryAfterSeconds: 9)
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self),
                       #"{"error":"No \"x\"\n","code":"VALIDATION_ERROR","suggestion":"s","#
                       + #""details":[{"path":["a","0"],"message":"m"},{"path":["jws"],"message":"r","step":"chain"}],"#
                       + #""request_id":"rid-1"}"#)
        XCTAssertEqual(r.headers["content-type"], "application/json")
        XCTAssertNil(r.headers["Retry-After"], "only 503s get the server's Retry-After")
        let unavailable = HTTPError.serviceUnavailable(message: "m", suggestion: "s")
        XCTAssertEqual(unavailable.response(requestID: "r", retryAfterSeconds: 9).headers["Retry-After"], "9")
        var own = unavailable
        own.headers.set("Retry-After", "3")
        XCTAssertEqual(own.response(requestID: "r", retryAfterSeconds: 9).headers["Retry-After"], "3")
    }

    func testHandlerErrorsAreRenderedByTheServerCore() throws {
        let request = Request(method: .get, path: "/x", requestID: "rid-2")
        let thrown: Handler = { _ in throw HTTPError(status: 409, code: "CONFLICT", message: "m", suggestion: "s") }
        let (conflict, conflictType) = ServerCore.invoke(thrown, request, retryAfterSeconds: 1)
        XCTAssertEqual(conflict.status, 409)
        XCTAssertNil(conflictType, "an HTTPError is an answer, not a failure")
        XCTAssertEqual(String(decoding: conflict.body, as: UTF8.self),
                       #"{"error":"m","code":"CONFLICT","suggestion":"s","request_id":"rid-2"}"#)
        struct Secret: Error { let password = "hunter2" }
        let (failed, failedType) = ServerCore.invoke({ _ in throw Secret() }, request, retryAfterSeconds: 1)
        XCTAssertEqual(failed.status, 500)
        XCTAssertEqual(failedType, "Secret", "the access log names the type")
        let body = try JSONParser.parse(failed.body)
        XCTAssertEqual(body["code"]?.stringValue, "INTERNAL_ERROR")
        XCTAssertEqual(body["error"]?.stringValue, "Internal server error.")
        XCTAssertEqual(body["request_id"]?.stringValue, "rid-2")
        XCTAssertFalse(String(decoding: failed.body, as: UTF8.self).contains("hunter2"))
    }

    func testRoutesCarryTheirDeclaredRateLimitScopes() {
        var router = Router()
        router.add(.post, "/v1/things/:publicKey", rateLimits: [.client, .publicKey]) { _ in Response(status: 200) }
        router.add(.get, "/healthz") { _ in Response(status: 200) }
        guard case .found(let route, _) = router.match(.post, "/v1/things/pk_1") else { return XCTFail("no match") }
        XCTAssertEqual(route.rateLimits, [.client, .publicKey])
        XCTAssertEqual(router.rateLimits(.get, "/healthz"), [])
        XCTAssertNil(router.rateLimits(.get, "/nowhere"))
    }

    /// The tree finds exactly what a scan of every route finds (the rule it replaced: same segment count, each
    /// literal equal byte for byte, the most literals winning, the first registered on a tie), on overlapping
    /// patterns and every path built from their pieces.
    func testTreeMatchesTheLinearScanOnOverlappingPatterns() {
        let patterns: [(HTTPMethod, String)] = [
            (.get, "/"), (.get, "/v1/a/:x"), (.post, "/v1/a/:x"), (.get, "/v1/a/b"), (.put, "/v1/:y/b"),
            (.get, "/v1/:y/:z"), (.delete, "/v1/:y/:z"), (.get, "/v1/:p/:q"), (.get, "/v1/a/:x/c"), (.get, "/v1/:y/b/c"),
            (.patch, "/v1/a/b/:w"), (.get, "/:root"), (.get, "/v1"), (.options, "/v1/a/:x/:v"), (.get, "/v1/a/:x/:v"),
            (.get, "/v1//x"), (.post, "/v2/:k"),
        ]
        var router = Router()
        for (method, pattern) in patterns { router.add(method, pattern) { _ in Response(status: 200) } }
        let pieces = ["", "v1", "v2", "a", "b", "c", "x", "zz"]
        var paths = ["/"]
        var frontier = [""]
        for _ in 0..<4 {
            frontier = frontier.flatMap { prefix in pieces.map { prefix + "/" + $0 } }
            paths += frontier
        }
        let methods: [HTTPMethod] = [.get, .head, .post, .put, .patch, .delete, .options]
        for path in paths {
            let segments = Router.split(path)
            let linear = router.routes.indices.filter { index in
                let pattern = router.routes[index].segments
                guard pattern.count == segments.count else { return false }
                return zip(pattern, segments).allSatisfy { segment, actual in
                    if case .literal(let literal) = segment { return literal.utf8.elementsEqual(actual.utf8) }
                    return true
                }
            }
            for method in methods {
                let expected = linear.filter { index in
                    router.routes[index].method == method || (method == .head && router.routes[index].method == .get)
                }.max { router.routes[$0].literalCount < router.routes[$1].literalCount || (router.routes[$0].literalCount == router.routes[$1].literalCount && $0 > $1) }
                switch router.match(method, path) {
                case .found(let route, _):
                    XCTAssertEqual(route.template, expected.map { router.routes[$0].template }, "\(method) \(path)")
                    XCTAssertEqual(route.method, expected.map { router.routes[$0].method }, "\(method) \(path)")
                case .methodNotAllowed(let allow):
                    XCTAssertNil(expected, "\(method) \(path)")
                    XCTAssertFalse(linear.isEmpty, "\(method) \(path)")
                    XCTAssertEqual(Set(allow), Set(linear.map { router.routes[$0].method.rawValue }).union(
                        linear.contains { router.routes[$0].method == .get } ? ["HEAD"] : []), "\(method) \(path)")
                case .notFound:
                    XCTAssertTrue(linear.isEmpty, "\(method) \(path)")
                case .badPath(let message):
                    XCTFail("\(method) \(path): \(message)")
                }
            }
        }
    }
}
