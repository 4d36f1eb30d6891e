import API
import Domain
import Foundation
import Glibc
import HTTPCore
import XCTest

/// The routes behind the real HTTP server on a port-0 socket: what the wire carries, not just the handler value.
final class LiveServerTests: XCTestCase {
    func testReceiptAndReadOverRealHTTP() throws {
        let h = Harness()
        h.register("a.b.c", facts())
        var configuration = HTTPServer.Configuration()
        configuration.port = 0
        configuration.workerCount = 2
        let server = HTTPServer(configuration: configuration, router: h.router, accessLog: nil)
        let port = try server.start()
        defer { server.shutdown(gracePeriod: .seconds(1)) }

        let body = #"{"signed_transaction_info":"a.b.c","user_id":"user_123"}"#
        let post = try Self.exchange(port: port, "POST /v1/receipts/\(Harness.publicKey) HTTP/1.1\r\nHost: x\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
        XCTAssertTrue(post.hasPrefix("HTTP/1.1 201 "), post)
        XCTAssertTrue(post.lowercased().contains("content-type: application/json\r\n"), post)
        XCTAssertTrue(post.hasSuffix(#""status":"active","environment":"Production"}"#), post)

        let get = try Self.exchange(port: port, "GET /v1/subscriptions/\(Harness.publicKey)/user_123 HTTP/1.1\r\n"
            + "Host: x\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(get.hasPrefix("HTTP/1.1 200 "), get)
        XCTAssertTrue(get.contains(#"{"user_id":"user_123","status":"active","entitlements":["pro"]"#), get)

        h.projects.failure = .unavailable
        let outage = try Self.exchange(port: port, "GET /v1/subscriptions/\(Harness.publicKey)/user_123 HTTP/1.1\r\n"
            + "Host: x\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(outage.hasPrefix("HTTP/1.1 503 "), outage)
        XCTAssertTrue(outage.lowercased().contains("retry-after: 1\r\n"), outage)
    }

    /// Sends `request` on a fresh connection and reads until the server closes it.
    static func exchange(port: Int, _ request: String) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == bytes.count else {
            throw POSIXError(.EIO)
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            response.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: response, as: UTF8.self)
    }
}
