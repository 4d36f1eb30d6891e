import Foundation
import XCTest
@testable import HTTPCore

/// A route may raise the body limit (`Router.add(maxBodyBytes:)`, how `POST /v1/receipts` takes 1 MiB StoreKit 1
/// receipts) while every other route keeps `Configuration.maxBodyBytes`, for Content-Length and chunked bodies.
final class RouteBodyLimitTests: XCTestCase {
    var port = 0
    var server: HTTPServer?

    override func setUpWithError() throws {
        var c = HTTPServer.Configuration()
        c.workerCount = 2
        c.eventLoopCount = 1
        var r = Router()
        r.add(.post, "/big/:id", maxBodyBytes: 1024 * 1024) { req in Response(status: 200, body: Array(String(req.body.count).utf8)) }
        r.add(.post, "/small/:id") { req in Response(status: 200, body: Array(String(req.body.count).utf8)) }
        (server, port) = try startLiveServer(c, router: r)
    }

    static let bodySize = 900 * 1024

    func testRaisedRouteAcceptsA900KBBodyOtherRoutesAnswer413() throws {
        let body = [UInt8](repeating: UInt8(ascii: "a"), count: Self.bodySize)
        let big = try TestClient(port: port).request("POST", "/big/1", body: body)
        XCTAssertEqual(big.status, 200, big.description)
        XCTAssertEqual(big.text, String(Self.bodySize))

        let small = try TestClient(port: port)
        let refused = try small.request("POST", "/small/1", body: body)
        XCTAssertEqual(refused.status, 413, refused.description)
        XCTAssertTrue(refused.text.contains(#""code":"PAYLOAD_TOO_LARGE""#), refused.text)
        XCTAssertEqual(refused.header("Connection"), "close")

        // The default limit (64 KiB) still holds on the raised route's neighbours, and the raised one has its own.
        let over = [UInt8](repeating: UInt8(ascii: "a"), count: 1024 * 1024 + 1)
        XCTAssertEqual(try TestClient(port: port).request("POST", "/big/1", body: over).status, 413)
        XCTAssertEqual(try TestClient(port: port).request("POST", "/small/1",
                                                          body: [UInt8](repeating: 0x61, count: 64 * 1024)).status, 200)
    }

    func testChunkedBodiesFollowTheRouteLimitToo() throws {
        func chunked(_ path: String, total: Int) throws -> HTTPResponse {
            let c = try TestClient(port: port)
            var wire = Array("POST \(path) HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
            var left = total
            while left > 0 {
                let n = min(left, 16 * 1024)
                wire += Array((String(n, radix: 16) + "\r\n").utf8) + [UInt8](repeating: 0x62, count: n) + Array("\r\n".utf8)
                left -= n
            }
            wire += Array("0\r\n\r\n".utf8)
            // The server may answer 413 and close before it read everything: a failed send is fine then.
            try? c.send(wire)
            return try c.readResponse()
        }
        let big = try chunked("/big/2", total: Self.bodySize)
        XCTAssertEqual(big.status, 200, big.description)
        XCTAssertEqual(big.text, String(Self.bodySize))
        let small = try chunked("/small/2", total: Self.bodySize)
        XCTAssertEqual(small.status, 413, small.description)
        XCTAssertEqual(try chunked("/big/3", total: 1024 * 1024 + 1).status, 413)
    }

    func testRouterReportsTheDeclaredLimit() {
        var r = Router()
        r.add(.post, "/big/:id", maxBodyBytes: 500_000) { _ in Response(status: 200, body: []) }
        r.add(.post, "/small/:id") { _ in Response(status: 200, body: []) }
        XCTAssertEqual(r.maxBodyBytes(method: .post, pattern: "/big/:id"), 500_000)
        XCTAssertNil(r.maxBodyBytes(method: .post, pattern: "/small/:id"))
        XCTAssertEqual(r.maxBodyBytes(.post, "/big/x"), 500_000)
        XCTAssertNil(r.maxBodyBytes(.get, "/big/x"))
        XCTAssertTrue(r.hasBodyLimitOverrides)

        var limits = ParserLimits()
        let router = r
        limits.routeBodyLimit = { method, path in router.maxBodyBytes(method, path) }
        XCTAssertEqual(limits.bodyLimits(.post, "/big/x").body, 500_000)
        XCTAssertEqual(limits.bodyLimits(.post, "/big/x").wire, 500_000 + 64 * 1024)
        XCTAssertEqual(limits.bodyLimits(.post, "/small/x").body, 64 * 1024)
        // A route limit at or below the server's changes nothing (it only raises).
        var low = Router()
        low.add(.post, "/low", maxBodyBytes: 10) { _ in Response(status: 200, body: []) }
        var lowLimits = ParserLimits()
        let lowRouter = low
        lowLimits.routeBodyLimit = { method, path in lowRouter.maxBodyBytes(method, path) }
        XCTAssertEqual(lowLimits.bodyLimits(.post, "/low").body, 64 * 1024)
    }
}
