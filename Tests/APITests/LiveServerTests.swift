import API
import Domain
import Foundation
import HTTPCore
import TestSupport
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
        try RawHTTPClient.exchange(port: port, request)
    }
}
