import XCTest
import HTTPClient

/// `RetryPolicy` as a table: attempts, idempotency, Retry-After and its cap, jittered backoff bounds.
final class RetryPolicyTests: XCTestCase {
    func testDecisions() {
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100), maxDelay: .seconds(1), maxRetryAfter: .seconds(10))
        typealias Row = (attempt: Int, idempotent: Bool, outcome: RetryPolicy.Outcome, expected: RetryPolicy.Decision)
        let rows: [Row] = [
            (1, true, .networkFailure, .retry(after: .milliseconds(50))),
            (2, true, .networkFailure, .retry(after: .milliseconds(100))),
            (3, true, .networkFailure, .stop),                                    // attempts exhausted
            (1, false, .networkFailure, .stop),                                   // a POST may have been applied
            (1, true, .response(status: 500, retryAfter: nil), .retry(after: .milliseconds(50))),
            (1, true, .response(status: 502, retryAfter: nil), .retry(after: .milliseconds(50))),
            (1, false, .response(status: 500, retryAfter: nil), .stop),
            (1, true, .response(status: 501, retryAfter: nil), .stop),
            (1, true, .response(status: 404, retryAfter: nil), .stop),
            (1, false, .response(status: 429, retryAfter: "2"), .retry(after: .seconds(2))),
            (1, false, .response(status: 429, retryAfter: nil), .retry(after: .milliseconds(50))),
            (1, true, .response(status: 503, retryAfter: "7"), .retry(after: .seconds(7))),
            (1, false, .response(status: 503, retryAfter: "7"), .stop),
            (1, true, .response(status: 429, retryAfter: "11"), .stop),          // above the cap: give up now
            (1, true, .response(status: 503, retryAfter: "Wed, 21 Oct 2015 07:28:00 GMT"), .retry(after: .milliseconds(50))),
            (2, true, .response(status: 429, retryAfter: "1"), .retry(after: .seconds(1))),
            (3, true, .response(status: 429, retryAfter: "1"), .stop),
        ]
        for row in rows {
            XCTAssertEqual(policy.decision(afterAttempt: row.attempt, idempotent: row.idempotent, outcome: row.outcome, jitter: 0.5),
                           row.expected, "\(row)")
        }
        XCTAssertEqual(RetryPolicy.never.decision(afterAttempt: 1, idempotent: true, outcome: .networkFailure, jitter: 0.5), .stop)
    }

    func testBackoffIsJitteredAndCapped() {
        let policy = RetryPolicy(baseDelay: .milliseconds(100), maxDelay: .seconds(1))
        XCTAssertEqual(policy.backoff(beforeRetry: 1, jitter: 0), .zero)
        XCTAssertEqual(policy.backoff(beforeRetry: 1, jitter: 1), .milliseconds(100))
        XCTAssertEqual(policy.backoff(beforeRetry: 3, jitter: 1), .milliseconds(400))
        XCTAssertEqual(policy.backoff(beforeRetry: 10, jitter: 1), .seconds(1))
        XCTAssertEqual(policy.backoff(beforeRetry: 1000, jitter: 0.5), .milliseconds(500))
        XCTAssertEqual(policy.backoff(beforeRetry: 2, jitter: .nan), .zero)
        XCTAssertEqual(RetryPolicy.delay(retryAfter: " 120 "), .seconds(120))
        XCTAssertNil(RetryPolicy.delay(retryAfter: "-1"))
        XCTAssertNil(RetryPolicy.delay(retryAfter: "9999999999"))
        XCTAssertNil(RetryPolicy.delay(retryAfter: ""))
        XCTAssertTrue(RetryPolicy.isIdempotent(method: "PUT"))
        XCTAssertFalse(RetryPolicy.isIdempotent(method: "POST"))
    }
}
