@testable import BouncerClient
import Foundation
import JSON
import Synchronization
import TestSupport
import XCTest

/// The retry loop over real sockets: a scripted local HTTP server answers 503/429 with `Retry-After` (or without),
/// then succeeds; and a real `bouncer serve` whose per-key rate limit answers 429.
final class RetryTests: XCTestCase {
    /// A Bouncer-shaped error body.
    static func errorBody(_ code: String) -> String {
        #"{"error":"Busy","code":"\#(code)","suggestion":"Retry later.","request_id":"req-\#(code)"}"#
    }

    static let userBody = #"{"user_id":"u","status":"none","entitlements":[],"subscriptions":[]}"#

    /// A server answering `script` in order (the last entry repeats), counting requests.
    static func scripted(_ script: [LocalHTTPSServer.Action]) throws -> LocalHTTPSServer {
        let served = Mutex(0)
        return try LocalHTTPSServer { _ in
            let index = served.withLock { n -> Int in
                defer { n += 1 }
                return n
            }
            return script[min(index, script.count - 1)]
        }
    }

    static func client(_ server: LocalHTTPSServer, _ policy: RetryPolicy = .default) -> BouncerClient {
        BouncerClient(baseURL: URL(fileURLWithPath: "/").withPort(server.port), publicKey: "pk_test",
                      timeout: 10, retryPolicy: policy)
    }

    func test503WithRetryAfterIsRetriedThenSucceeds() async throws {
        let server = try Self.scripted([
            .respond(status: 503, headers: [("Content-Type", "application/json"), ("Retry-After", "1")],
                     body: Self.errorBody("SERVICE_UNAVAILABLE")),
            .respond(status: 200, headers: [("Content-Type", "application/json")], body: Self.userBody),
        ])
        defer { server.stop() }
        let answer = try await Self.client(server).subscriptions(userId: "u")
        XCTAssertEqual(answer.userId, "u")
        XCTAssertEqual(server.requests.map(\.path), ["/v1/subscriptions/pk_test/u", "/v1/subscriptions/pk_test/u"])
    }

    func test429WithoutRetryAfterBacksOffThenSucceeds() async throws {
        let server = try Self.scripted([
            .respond(status: 429, headers: [("Content-Type", "application/json")], body: Self.errorBody("RATE_LIMITED")),
            .respond(status: 200, headers: [("Content-Type", "application/json")], body: Self.userBody),
        ])
        defer { server.stop() }
        let policy = RetryPolicy(maxAttempts: 3, maxTotalWait: 5, initialBackoff: 0.01)
        _ = try await Self.client(server, policy).subscriptions(userId: "u")
        XCTAssertEqual(server.requests.count, 2)
    }

    func testPersistent429IsSurfacedAfterTheAttemptCap() async throws {
        let server = try Self.scripted([
            .respond(status: 429, headers: [("Content-Type", "application/json"), ("Retry-After", "0")],
                     body: Self.errorBody("RATE_LIMITED")),
        ])
        defer { server.stop() }
        let error = await bouncerError { try await Self.client(server).subscriptions(userId: "u") }
        XCTAssertEqual(error?.kind, .server)
        XCTAssertEqual(error?.status, 429)
        XCTAssertEqual(error?.code, "RATE_LIMITED")
        XCTAssertEqual(error?.message, "Busy")
        XCTAssertEqual(error?.suggestion, "Retry later.")
        XCTAssertEqual(error?.requestId, "req-RATE_LIMITED")
        XCTAssertEqual(error?.retryAfter, 0)
        XCTAssertEqual(error?.attempts, 3)
        XCTAssertEqual(server.requests.count, 3)
    }

    func testRetryAfterBeyondTheTotalWaitCapIsSurfacedWithoutWaiting() async throws {
        let server = try Self.scripted([
            .respond(status: 503, headers: [("Content-Type", "application/json"), ("Retry-After", "120")],
                     body: Self.errorBody("SERVICE_UNAVAILABLE")),
        ])
        defer { server.stop() }
        let error = await bouncerError { try await Self.client(server).subscriptions(userId: "u") }
        XCTAssertEqual(error?.status, 503)
        XCTAssertEqual(error?.retryAfter, 120)
        XCTAssertEqual(error?.attempts, 1)
        XCTAssertEqual(server.requests.count, 1)
    }

    func testOtherErrorsAreNeverRetried() async throws {
        let server = try Self.scripted([
            .respond(status: 500, headers: [("Content-Type", "application/json")], body: Self.errorBody("INTERNAL_ERROR")),
        ])
        defer { server.stop() }
        let error = await bouncerError { try await Self.client(server).subscriptions(userId: "u") }
        XCTAssertEqual(error?.status, 500)
        XCTAssertEqual(error?.code, "INTERNAL_ERROR")
        XCTAssertEqual(server.requests.count, 1)
    }

    func testAnswersThatAreNotBouncersAreInvalidResponses() async throws {
        let server = try Self.scripted([
            .respond(status: 502, headers: [("Content-Type", "text/html")], body: "<html>Bad gateway</html>"),
            .respond(status: 200, headers: [("Content-Type", "application/json")], body: #"{"user_id":1}"#),
        ])
        defer { server.stop() }
        let proxy = await bouncerError { try await Self.client(server).subscriptions(userId: "u") }
        XCTAssertEqual(proxy?.kind, .invalidResponse)
        XCTAssertEqual(proxy?.status, 502)
        XCTAssertNil(proxy?.code)
        let garbled = await bouncerError { try await Self.client(server).subscriptions(userId: "u") }
        XCTAssertEqual(garbled?.kind, .invalidResponse)
        XCTAssertEqual(garbled?.status, 200)
        XCTAssertTrue(garbled?.underlying is DecodingError, "\(String(describing: garbled?.underlying))")
    }

    func testRequestsCarryJSONAndTheSecretKeyOnlyWhereItBelongs() async throws {
        let server = try Self.scripted([
            .respond(status: 201, headers: [("Content-Type", "application/json")], body: #"""
                {"valid":true,"transaction_id":"1","original_transaction_id":"1","product_id":"p","entitlements":[],
                 "expires_date":"2030-01-02T03:04:05.678Z","status":"expired","environment":"Sandbox"}
                """#),
        ])
        defer { server.stop() }
        let client = BouncerClient(baseURL: URL(fileURLWithPath: "/").withPort(server.port), publicKey: "pk_test",
                                   secretKey: "sk_secret")
        let result = try await client.postTransactionId("123", userId: "u")
        XCTAssertEqual(result.expiresDate, Date(timeIntervalSince1970: 1_893_553_445.678))
        let request = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/v1/receipts/pk_test")
        XCTAssertEqual(request.header("Content-Type"), "application/json")
        XCTAssertNil(request.header("Authorization"), "the secret key goes only to reads")
        XCTAssertEqual(try JSONParser.parse(request.body), ["transaction_id": "123", "user_id": "u"])

        _ = try? await client.postReceipt(receiptData: "MIIT", userId: "u")
        XCTAssertEqual(try JSONParser.parse(server.requests[1].body), ["receipt_data": "MIIT", "user_id": "u"])
        _ = try? await client.subscriptions(userId: "u")
        XCTAssertEqual(server.requests[2].header("Authorization"), "Bearer sk_secret")
    }
}

extension RetryTests {
    func testABasePathPrefixIsKept() async throws {
        let server = try Self.scripted([
            .respond(status: 200, headers: [("Content-Type", "application/json")], body: Self.userBody),
        ])
        defer { server.stop() }
        let base = URL(fileURLWithPath: "/").withPort(server.port).appendingPathComponent("bouncer/")
        _ = try await BouncerClient(baseURL: base, publicKey: "pk_test").subscriptions(userId: "u")
        XCTAssertEqual(server.requests.map(\.path), ["/bouncer/v1/subscriptions/pk_test/u"])
    }
}

/// 429 from a real `bouncer serve` rate limit (per public key, burst 1).
final class RateLimitLiveTests: XCTestCase {
    func testRateLimitIsHonouredThenSurfacedBeyondTheCap() async throws {
        // 0.5 requests/s: an empty bucket answers 429 with Retry-After 2 (or 1).
        let live = try LiveBouncer(label: "ratelimit", overrides: [
            "BOUNCER_RATE_LIMIT_PUBLIC_KEY": "0.5", "BOUNCER_RATE_LIMIT_PUBLIC_KEY_BURST": "1",
        ])
        defer { live.stop() }
        let project = try live.project()
        _ = try await live.client(project).subscriptions(userId: "a")   // takes the one token

        let surfaced = await bouncerError { try await live.client(project, retry: .never).subscriptions(userId: "a") }
        assertServerError(surfaced, 429, "RATE_LIMITED", message: "Too many requests.")
        XCTAssertNotNil(surfaced?.retryAfter)

        // The default policy waits Retry-After and gets through.
        let answer = try await live.client(project).subscriptions(userId: "a")
        XCTAssertEqual(answer.userId, "a")

        // A slower bucket (Retry-After 100) is beyond the 10 s cap: surfaced at once after one attempt.
        let slow = try LiveBouncer(label: "ratelimitslow", overrides: [
            "BOUNCER_RATE_LIMIT_PUBLIC_KEY": "0.01", "BOUNCER_RATE_LIMIT_PUBLIC_KEY_BURST": "1",
        ])
        defer { slow.stop() }
        let other = try slow.project()
        _ = try await slow.client(other).subscriptions(userId: "b")
        let capped = await bouncerError { try await slow.client(other).subscriptions(userId: "b") }
        assertServerError(capped, 429, "RATE_LIMITED", message: "Too many requests.")
        XCTAssertEqual(capped?.retryAfter, 100)
    }
}
