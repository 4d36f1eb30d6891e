import XCTest

/// The shared test client's framing (TestSupport): what every live test relies on to read a response.
final class TestClientTests: XCTestCase {
    func testParsesContentLengthAndChunkedBodies() throws {
        let sized = try TestClient.parse(Array("HTTP/1.1 201 Created\r\nContent-Length: 2\r\nX-A:  b \r\n\r\nhiEXTRA".utf8))
        XCTAssertEqual(sized.status, 201)
        XCTAssertEqual(sized.text, "hi")
        XCTAssertEqual(sized.header("x-a"), "b")
        let chunked = try TestClient.parse(Array(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nTrailer: t\r\n\r\n".utf8))
        XCTAssertEqual(chunked.text, "hello!")
        XCTAssertThrowsError(try TestClient.parse(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel".utf8)))
        XCTAssertThrowsError(try TestClient.parse(Array("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort".utf8)))
        XCTAssertThrowsError(try TestClient.parse(Array("SMTP 220 hi\r\n\r\n".utf8)))
    }

    /// Two responses in one read, the second chunked, come out one at a time on a keep-alive connection.
    func testReadsPipelinedResponsesFromALiveSocket() throws {
        var listener = try Listener()
        let client = try TestClient(port: listener.port)
        try listener.acceptAndWrite(
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"
            + "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n"
            + "HTTP/1.1 204 No Content\r\n\r\n")
        XCTAssertEqual(try client.readResponse().text, "one")
        XCTAssertEqual(try client.readResponse().text, "two")
        XCTAssertEqual(try client.readResponse().status, 204)
        listener.closeAccepted()
        XCTAssertTrue(client.isClosedByPeer())
    }
}

/// A one-connection loopback listener on port 0 that writes canned bytes.
private struct Listener {
    let fd: Int32
    let port: Int
    var accepted: Int32 = -1

    init() throws {
        let sock = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(sock, $0, length) == 0 && listen(sock, 1) == 0 && getsockname(sock, $0, &length) == 0
            }
        }
        guard ok else {
            close(sock)
            throw HarnessFailure(description: "listener: errno \(errno)")
        }
        fd = sock
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    mutating func acceptAndWrite(_ text: String) throws {
        accepted = accept(fd, nil, nil)
        let bytes = Array(text.utf8)
        guard accepted >= 0, bytes.withUnsafeBytes({ send(accepted, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw HarnessFailure(description: "listener write: errno \(errno)")
        }
    }

    func closeAccepted() {
        close(accepted)
        close(fd)
    }
}
