@testable import BouncerClient
import Foundation
import TestSupport
import XCTest

/// Pure parts: the retry decisions, `Retry-After` parsing, path encoding, date decoding, descriptions.
final class ClientUnitTests: XCTestCase {
    func testRetryDecisions() {
        let policy = RetryPolicy(maxAttempts: 3, maxTotalWait: 10, initialBackoff: 0.5)
        XCTAssertEqual(policy.delay(afterAttempt: 1, status: 503, retryAfter: 2, waited: 0), 2)
        XCTAssertEqual(policy.delay(afterAttempt: 1, status: 429, retryAfter: nil, waited: 0), 0.5)
        XCTAssertEqual(policy.delay(afterAttempt: 2, status: 429, retryAfter: nil, waited: 0.5), 1)
        XCTAssertNil(policy.delay(afterAttempt: 3, status: 503, retryAfter: 0, waited: 0), "attempt cap")
        XCTAssertNil(policy.delay(afterAttempt: 1, status: 503, retryAfter: 11, waited: 0), "total wait cap")
        XCTAssertNil(policy.delay(afterAttempt: 2, status: 503, retryAfter: 5, waited: 6), "total wait cap, cumulative")
        XCTAssertEqual(policy.delay(afterAttempt: 2, status: 503, retryAfter: 4, waited: 6), 4, "exactly the cap")
        for status in [400, 401, 404, 409, 500, 502, 504] {
            XCTAssertNil(policy.delay(afterAttempt: 1, status: status, retryAfter: 1, waited: 0), "\(status)")
        }
        XCTAssertNil(RetryPolicy.never.delay(afterAttempt: 1, status: 503, retryAfter: 0, waited: 0))
        XCTAssertEqual(RetryPolicy(maxAttempts: 0, maxTotalWait: -1, initialBackoff: .nan),
                       RetryPolicy(maxAttempts: 1, maxTotalWait: 0, initialBackoff: 0))
        XCTAssertEqual(RetryPolicy(maxTotalWait: .infinity).maxTotalWait, 0)
        // A huge attempt count does not overflow the backoff.
        let many = RetryPolicy(maxAttempts: 1_000, maxTotalWait: 1e300, initialBackoff: 1)
        XCTAssertEqual(many.delay(afterAttempt: 900, status: 503, retryAfter: nil, waited: 0), 1_048_576)
    }

    func testRetryAfterIsDeltaSecondsOnly() {
        XCTAssertEqual(RetryPolicy.parseRetryAfter("30"), 30)
        XCTAssertEqual(RetryPolicy.parseRetryAfter(" 0 "), 0)
        XCTAssertNil(RetryPolicy.parseRetryAfter(nil))
        XCTAssertNil(RetryPolicy.parseRetryAfter(""))
        XCTAssertNil(RetryPolicy.parseRetryAfter("-1"))
        XCTAssertNil(RetryPolicy.parseRetryAfter("1.5"))
        XCTAssertNil(RetryPolicy.parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"))
        XCTAssertNil(RetryPolicy.parseRetryAfter("99999999999999999999"))
    }

    func testPathSegmentsArePercentEncoded() {
        XCTAssertEqual(BouncerClient.percentEncoded("pk_abc-1.2~"), "pk_abc-1.2~")
        XCTAssertEqual(BouncerClient.percentEncoded("a/b c?d#é"), "a%2Fb%20c%3Fd%23%C3%A9")
        XCTAssertEqual(BouncerClient.percentEncoded(".."), "%2E%2E")
        XCTAssertEqual(BouncerClient.percentEncoded("."), "%2E")
        XCTAssertEqual(BouncerClient.percentEncoded(""), "")
    }

    func testDatesDecodeWithAndWithoutMilliseconds() throws {
        struct D: Decodable { var at: Date }
        let decoder = BouncerClient.makeDecoder()
        XCTAssertEqual(try decoder.decode(D.self, from: Data(#"{"at":"2030-01-02T03:04:05.678Z"}"#.utf8)).at,
                       Date(timeIntervalSince1970: 1_893_553_445.678))
        XCTAssertEqual(try decoder.decode(D.self, from: Data(#"{"at":"2030-01-02T03:04:05Z"}"#.utf8)).at,
                       Date(timeIntervalSince1970: 1_893_553_445))
        XCTAssertThrowsError(try decoder.decode(D.self, from: Data(#"{"at":"yesterday"}"#.utf8)))
    }

    func testUnknownStatusesAndEnvironmentsDecode() throws {
        let body = #"{"user_id":"u","status":"paused","entitlements":[],"subscriptions":[]}"#
        let user = try BouncerClient.makeDecoder().decode(UserSubscriptions.self, from: Data(body.utf8))
        XCTAssertEqual(user.status, PurchaseStatus(rawValue: "paused"))
        XCTAssertEqual(StoreEnvironment(rawValue: "Xcode").description, "Xcode")
    }

    func testDescriptionsHideTheSecretKey() throws {
        let client = BouncerClient(baseURL: URL(fileURLWithPath: "/").withPort(1), publicKey: "pk_public",
                                   secretKey: "sk_very_secret")
        XCTAssertEqual(client.description,
                       "BouncerClient(baseURL: http://127.0.0.1:1, publicKey: pk_public, secretKey: <redacted>)")
        var dumped = ""
        dump(client, to: &dumped)
        XCTAssertFalse(dumped.contains("sk_very_secret"), dumped)
        XCTAssertFalse(String(reflecting: client).contains("sk_very_secret"))
        let error = BouncerError(kind: .server, status: 400, code: "VALIDATION_ERROR", message: "Validation error",
                                 requestId: "r1")
        XCTAssertEqual(error.description, "400 VALIDATION_ERROR: Validation error (request_id r1)")
        XCTAssertEqual(BouncerError(kind: .transport, message: "No answer").description, "transport: No answer")
    }

    func testABaseURLThatTakesNoPathIsRefusedBeforeSending() async throws {
        let client = BouncerClient(baseURL: try XCTUnwrap(URL(string: "mailto:someone@example.com")), publicKey: "pk_x")
        let error = await bouncerError { try await client.subscriptions(userId: "u") }
        XCTAssertEqual(error?.kind, .invalidRequest)
        XCTAssertEqual(error?.attempts, 0)
    }
}
