import XCTest
@testable import HTTPClient

/// The response parser on well-formed, split and hostile input.
final class ResponseParserTests: XCTestCase {
    private func parse(_ text: String, limits: ResponseParser.Limits = ResponseParser.Limits(), method: String = "GET",
                       split: Int? = nil, eof: Bool = false) throws -> (HTTPClientResponse, Bool) {
        var parser = ResponseParser(limits: limits, requestMethod: method)
        let bytes = Array(text.utf8)
        let step = split ?? max(bytes.count, 1)
        var index = 0
        while index < bytes.count {
            let end = min(index + step, bytes.count)
            if let response = try parser.feed(bytes[index..<end]) { return (response, parser.connectionReusable) }
            index = end
        }
        if eof { return (try parser.finish(), parser.connectionReusable) }
        XCTFail("incomplete")
        throw HTTPClientError(.io, "incomplete")
    }

    func testContentLengthChunkedAndCloseDelimited() throws {
        for split in [nil, 1, 3, 7] {
            let (fixed, reusable) = try parse("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", split: split)
            XCTAssertEqual(fixed.status, 200)
            XCTAssertEqual(fixed.header("content-type"), "application/json")
            XCTAssertEqual(fixed.body, Array("{}".utf8))
            XCTAssertTrue(reusable)
            let (chunked, chunkedReusable) = try parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: y\r\n\r\n", split: split)
            XCTAssertEqual(String(decoding: chunked.body, as: UTF8.self), "Wikipedia in\r\n\r\nchunks.")
            XCTAssertTrue(chunkedReusable)
        }
        let (closed, reusable) = try parse("HTTP/1.1 200 OK\r\n\r\nuntil close", eof: true)
        XCTAssertEqual(closed.body, Array("until close".utf8))
        XCTAssertFalse(reusable)
        XCTAssertFalse(try parse("HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n").1)
        XCTAssertFalse(try parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").1)
        XCTAssertEqual(try parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n").0.status, 204)
        XCTAssertEqual(try parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", method: "HEAD").0.body, [])
        XCTAssertEqual(try parse("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n").0.body, [])
        XCTAssertEqual(try parse("HTTP/1.1 200\r\nContent-Length: 1, 1\r\n\r\nx").0.body, [UInt8(ascii: "x")])
        XCTAssertEqual(try parse("HTTP/1.1 429 \r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n").0.header("RETRY-AFTER"), "3")
    }

    func testHostileInputIsRefusedWithTheRightCode() {
        let protocolErrors = [
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX : a\r\n\r\n",
            "HTTP/1.1 200 OK\r\n: a\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: a\u{0}b\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
            "HTTP/1.1 200 OK\nX: a\r\n\r\n",
            "HTTP/1.1 20 OK\r\n\r\n",
            "HTTP/1.1 600 OK\r\n\r\n",
            "HTTP/2.0 200 OK\r\n\r\n",
            "HTTP/1.1 200OK\r\n\r\n",
            "SSH-2.0-OpenSSH_9.6\r\n\r\n",
            "HTTP/1.1 101 Switching Protocols\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1 x\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\nab\r\n",
        ]
        for text in protocolErrors {
            XCTAssertThrowsError(try parse(text), text.debugDescription) { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .protocolError, "\(text.debugDescription): \(error)")
            }
        }
        let small = ResponseParser.Limits(maxHeadBytes: 128, maxHeaderCount: 3, maxBodyBytes: 16)
        let tooLarge = [
            "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n1\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
            "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 200) + "\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: " + String(repeating: "a", count: 200) + "\r\n\r\n",
        ]
        for text in tooLarge {
            XCTAssertThrowsError(try parse(text, limits: small), text.debugDescription) { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .tooLarge, "\(text.debugDescription): \(error)")
            }
        }
        XCTAssertThrowsError(try parse("HTTP/1.1 200 OK\r\n\r\n" + String(repeating: "a", count: 17), limits: small, eof: true)) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .tooLarge)
        }
        // Cut short: the stream ends inside the head or the body.
        for text in ["", "HTTP/1.1 200 OK\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"] {
            XCTAssertThrowsError(try parse(text, eof: true)) { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .io, "\(text.debugDescription): \(error)")
            }
        }
    }

    func testEndlessHeadIsBoundedWithoutTerminator() {
        var parser = ResponseParser(limits: ResponseParser.Limits(maxHeadBytes: 1024))
        XCTAssertThrowsError(try {
            for _ in 0..<100 { _ = try parser.feed(Array(repeating: UInt8(ascii: "a"), count: 100)) }
        }()) { error in XCTAssertEqual((error as? HTTPClientError)?.code, .tooLarge) }
    }
}
