import XCTest
@testable import HTTPCore

final class RequestParserTests: XCTestCase {
    let limits = ParserLimits()

    /// Feeds all bytes at once.
    func whole(_ text: String, _ limits: ParserLimits? = nil) -> ParseOutcome {
        var p = RequestParser(limits: limits ?? self.limits)
        return p.parse(Array(text.utf8))
    }

    /// Feeds growing prefixes (one more byte each time) until the parser decides.
    func byteByByte(_ text: String, _ limits: ParserLimits? = nil) -> ParseOutcome {
        var p = RequestParser(limits: limits ?? self.limits)
        let bytes = Array(text.utf8)
        for n in 1...bytes.count {
            let outcome = p.parse(Array(bytes[0..<n]))
            if case .needMore = outcome { continue }
            return outcome
        }
        return .needMore
    }

    func request(_ outcome: ParseOutcome, file: StaticString = #filePath, line: UInt = #line) throws -> (ParsedRequest, Int) {
        guard case .request(let r, let consumed) = outcome else {
            XCTFail("expected a request, got \(outcome)", file: file, line: line)
            throw XCTSkip("no request")
        }
        return (r, consumed)
    }

    func status(_ outcome: ParseOutcome) -> Int? {
        if case .failure(let e) = outcome { return e.status }
        return nil
    }

    /// Asserts the same rejection whole and byte-by-byte.
    func assertRejected(_ text: String, _ expected: Int, limits: ParserLimits? = nil,
                        file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(status(whole(text, limits)), expected, "whole: \(text.debugDescription)", file: file, line: line)
        XCTAssertEqual(status(byteByByte(text, limits)), expected, "byte-by-byte: \(text.debugDescription)", file: file, line: line)
    }

    // MARK: accepted

    func testSimpleGetWholeAndByteByByte() throws {
        let text = "GET /v1/ping?x=1&y=%41 HTTP/1.1\r\nHost: example\r\nX-Request-Id: abc\r\nAccept: */*\r\n\r\n"
        for outcome in [whole(text), byteByByte(text)] {
            let (r, consumed) = try request(outcome)
            XCTAssertEqual(consumed, text.utf8.count)
            XCTAssertEqual(r.method, .get)
            XCTAssertEqual(r.path, "/v1/ping")
            XCTAssertEqual(r.query, "x=1&y=%41")
            XCTAssertEqual(r.versionMinor, 1)
            XCTAssertTrue(r.keepAlive)
            XCTAssertEqual(r.requestIDHeader, "abc")
            XCTAssertEqual(r.headers.count, 3)
            XCTAssertEqual(r.headers["host"], "example")
            XCTAssertEqual(r.headers["ACCEPT"], "*/*")
            XCTAssertEqual(r.body, [])
        }
    }

    func testPipelinedRequestsAreReturnedOneAtATime() throws {
        let one = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
        let two = "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"
        let three = "GET /c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
        let bytes = Array((one + two + three).utf8)
        var p = RequestParser(limits: limits)
        var start = 0
        var seen: [(String, [UInt8], Bool)] = []
        while start < bytes.count {
            let (r, consumed) = try request(p.parse(Array(bytes[start...])))
            seen.append((r.path, r.body, r.keepAlive))
            start += consumed
        }
        XCTAssertEqual(seen.map(\.0), ["/a", "/b", "/c"])
        XCTAssertEqual(seen.map(\.1), [[], Array("xyz".utf8), []])
        XCTAssertEqual(seen.map(\.2), [true, true, false])
    }

    func testContentLengthBodyByteByByte() throws {
        let text = "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world"
        let (r, consumed) = try request(byteByByte(text))
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "hello world")
        XCTAssertEqual(consumed, text.utf8.count)
    }

    func testChunkedBodyWithExtensionsAndTrailers() throws {
        let text = "POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\nA\r\n, chunked!\r\n0\r\nX-Trailer: t\r\n\r\n"
        for outcome in [whole(text), byteByByte(text)] {
            let (r, consumed) = try request(outcome)
            XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "hello, chunked!")
            XCTAssertEqual(consumed, text.utf8.count)
        }
    }

    func testHTTP10KeepAliveOnlyWhenAsked() throws {
        XCTAssertFalse(try request(whole("GET / HTTP/1.0\r\n\r\n")).0.keepAlive)
        XCTAssertTrue(try request(whole("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")).0.keepAlive)
        XCTAssertFalse(try request(whole("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")).0.keepAlive)
        XCTAssertEqual(try request(whole("GET / HTTP/1.0\r\n\r\n")).0.versionMinor, 0)
    }

    func testExpectContinueIsRequestedOnceBeforeTheBody() throws {
        var p = RequestParser(limits: limits)
        let head = Array("POST /x HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n".utf8)
        guard case .needMore = p.parse(head) else { return XCTFail("expected needMore") }
        XCTAssertTrue(p.continueRequested)
        p.continueRequested = false
        let (r, _) = try request(p.parse(head + Array("ok".utf8)))
        XCTAssertEqual(r.body, Array("ok".utf8))
        XCTAssertFalse(p.continueRequested)
    }

    func testAbsoluteFormAsteriskAndLeadingEmptyLines() throws {
        let (a, _) = try request(whole("GET http://example.com/v1/x?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n"))
        XCTAssertEqual(a.path, "/v1/x")
        XCTAssertEqual(a.query, "q=1")
        let (b, _) = try request(whole("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"))
        XCTAssertEqual(b.path, "*")
        let text = "\r\n\r\nGET /z HTTP/1.1\r\nHost: h\r\n\r\n"
        let (c, consumed) = try request(whole(text))
        XCTAssertEqual(c.path, "/z")
        XCTAssertEqual(consumed, text.utf8.count)
    }

    func testHeaderValuesAreTrimmedAndDuplicatesKept() throws {
        let (r, _) = try request(whole("GET / HTTP/1.1\r\nHost: h\r\nX-A:  one \t\r\nx-a: two\r\n\r\n"))
        XCTAssertEqual(r.headers.values(for: "X-A"), ["one", "two"])
        XCTAssertEqual(r.headers.map(\.name), ["Host", "X-A", "x-a"])
    }

    func testHTTP12IsAnsweredAsHTTP11() throws {
        XCTAssertEqual(try request(whole("GET / HTTP/1.2\r\nHost: h\r\n\r\n")).0.versionMinor, 1)
    }

    // MARK: rejected, each with its exact status

    func testContentLengthWithTransferEncodingIs400() {
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc", 400)
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc", 400)
    }

    func testDuplicateOrInvalidContentLengthIs400() {
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400)
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\nabc", 400)
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400)
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\n", 400)
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n", 400)
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n", 400)
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", 400)
    }

    func testObsFoldIs400() {
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nX-Long: a\r\n  continued\r\n\r\n", 400)
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nX-Long: a\r\n\tcontinued\r\n\r\n", 400)
    }

    func testBareCRAndBareLFAre400() {
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", 400)
        assertRejected("GET / HTTP/1.1\nHost: h\n\n", 400)
        assertRejected("GET / HTTP/1.1\r\nHost: h\nX: y\r\n\r\n", 400)
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\n\n", 400)
        assertRejected("GET /\r HTTP/1.1\r\nHost: h\r\n\r\n", 400)
    }

    func testInvalidHeaderSyntaxIs400() {
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nBad Name: x\r\n\r\n", 400)
        assertRejected("GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400)
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400)
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\n: empty\r\n\r\n", 400)
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nX: a\u{0}b\r\n\r\n", 400)
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nX: a\u{7F}b\r\n\r\n", 400)
    }

    func testInvalidMethodsTargetsAndVersions() {
        assertRejected("G@T / HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        assertRejected("ABCDEFGHIJKLMNOPQRSTU / HTTP/1.1\r\nHost: h\r\n\r\n", 501)  // 21-byte token
        assertRejected("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", 400)  // authority-form: not a server of proxies
        assertRejected("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        assertRejected("GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400)
        assertRejected("GET foo HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        assertRejected("GET /a#frag HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        assertRejected("GET /\u{7F} HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        assertRejected("GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400)
        assertRejected("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505)
        assertRejected("GET / HTTP/0.9\r\nHost: h\r\n\r\n", 505)
        assertRejected("GET / HTTP/1\r\nHost: h\r\n\r\n", 400)
        assertRejected("GET / http/1.1\r\nHost: h\r\n\r\n", 400)
        assertRejected("GET /\r\nHost: h\r\n\r\n", 400)
    }

    func testHostRules() {
        assertRejected("GET / HTTP/1.1\r\nAccept: x\r\n\r\n", 400)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400)
    }

    func testRequestLineTooLongIs414() {
        let long = "GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: h\r\n\r\n"
        assertRejected(long, 414)
        // Still cut off when the line never ends.
        XCTAssertEqual(status(whole("GET /" + String(repeating: "a", count: 9000))), 414)
    }

    func testHeaderSectionOrCountTooLargeIs431() {
        let big = "GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "v", count: 17000) + "\r\n\r\n"
        XCTAssertEqual(status(whole(big)), 431)
        XCTAssertEqual(status(whole(String(big.dropLast(4)))), 431, "cut off before the head ends")
        var many = "GET / HTTP/1.1\r\nHost: h\r\n"
        for i in 0..<100 { many += "X-\(i): v\r\n" }
        assertRejected(many + "\r\n", 431)
        var small = ParserLimits()
        small.maxHeaderBytes = 64
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "v", count: 80) + "\r\n\r\n", 431, limits: small)
    }

    func testBodyTooLargeIs413() {
        var small = ParserLimits()
        small.maxBodyBytes = 10
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", 413, limits: small)
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n5\r\nghijk\r\n0\r\n\r\n",
                       413, limits: small)
        XCTAssertEqual(status(whole("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 65537\r\n\r\n")), 413)
    }

    func testTransferEncodingRules() {
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 400)
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400)
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501)
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400)
        assertRejected("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400)
    }

    func testMalformedChunksAre400() {
        let head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        assertRejected(head + "zz\r\nab\r\n0\r\n\r\n", 400)
        assertRejected(head + "2\r\nabX\r\n0\r\n\r\n", 400)
        assertRejected(head + "2 x\r\nab\r\n0\r\n\r\n", 400)
        assertRejected(head + "11111111111111111\r\n", 400)
        assertRejected(head + "2\nab\r\n0\r\n\r\n", 400)
        assertRejected(head + "0\r\nBad\u{1}: x\r\n\r\n", 400)
        assertRejected(head + "1;" + String(repeating: "e", count: 2000) + "\r\na\r\n0\r\n\r\n", 400)
    }

    func testChunkedWireBytesAreLimitedNotOnlyDecodedBytes() throws {
        var small = ParserLimits()
        small.maxBodyBytes = 100
        small.maxChunkedBodyWireBytes = 400
        let head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        // 1-byte chunks with 60-byte extensions: 10 decoded bytes, but ~700 bytes on the wire.
        let extended = String(repeating: "1;e=" + String(repeating: "a", count: 56) + "\r\nx\r\n", count: 10) + "0\r\n\r\n"
        XCTAssertEqual(status(whole(head + extended, ParserLimits())), nil, "fits the default budget")
        assertRejected(head + extended, 413, limits: small)
        // A chunk whose data would end past the budget is refused when its size line arrives.
        let late = String(repeating: "1;e=" + String(repeating: "a", count: 56) + "\r\nx\r\n", count: 5) + "50\r\n"
        XCTAssertEqual(status(whole(head + late, small)), 413)
        // Endless trailers stay a 431 (header-section limit); a never-ending size line stays a 400.
        assertRejected(head + "0\r\n" + String(repeating: "X-T: " + String(repeating: "t", count: 50) + "\r\n", count: 400), 431)
        assertRejected(head + "0;ext=" + String(repeating: "a", count: 5000), 400)
        // Small chunks whose framing stays inside the budget are still accepted, whole and byte by byte.
        let fine = String(repeating: "A\r\n0123456789\r\n", count: 10) + "0\r\n\r\n"
        for outcome in [whole(head + fine, small), byteByByte(head + fine, small)] {
            XCTAssertEqual(try request(outcome).0.body.count, 100)
        }
    }

    func testUnsupportedExpectationIs417() {
        assertRejected("POST / HTTP/1.1\r\nHost: h\r\nExpect: teapot\r\nContent-Length: 1\r\n\r\nx", 417)
    }

    func testEndlessEmptyLinesAre400() {
        XCTAssertEqual(status(whole(String(repeating: "\r\n", count: 5000))), 400)
    }
}
