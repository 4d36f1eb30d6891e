import Foundation
import HTTPClient
import XCTest

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
            (1, true, .response(status: 503, retryAfter: "Wed, 21 Oct 2015 07:28:00 GMT"), .retry(after: .zero)),   // past: now
            (1, true, .response(status: 503, retryAfter: "Tue, 14 Nov 2023 22:13:27 GMT"), .retry(after: .seconds(7))),
            (1, false, .response(status: 429, retryAfter: "1700000007000"), .retry(after: .seconds(7))),   // Apple's ms
            (1, false, .response(status: 429, retryAfter: "1700000011000"), .stop),                       // Apple's, above the cap
            (1, false, .response(status: 429, retryAfter: "soon"), .retry(after: .milliseconds(50))),      // garbage: backoff
            (2, true, .response(status: 429, retryAfter: "1"), .retry(after: .seconds(1))),
            (3, true, .response(status: 429, retryAfter: "1"), .stop),
        ]
        for row in rows {
            XCTAssertEqual(policy.decision(afterAttempt: row.attempt, idempotent: row.idempotent, outcome: row.outcome, jitter: 0.5, now: Self.now),
                           row.expected, "\(row)")
        }
        XCTAssertEqual(RetryPolicy.never.decision(afterAttempt: 1, idempotent: true, outcome: .networkFailure, jitter: 0.5, now: Self.now), .stop)
    }

    func testBackoffIsJitteredAndCapped() {
        let policy = RetryPolicy(baseDelay: .milliseconds(100), maxDelay: .seconds(1))
        XCTAssertEqual(policy.backoff(beforeRetry: 1, jitter: 0), .zero)
        XCTAssertEqual(policy.backoff(beforeRetry: 1, jitter: 1), .milliseconds(100))
        XCTAssertEqual(policy.backoff(beforeRetry: 3, jitter: 1), .milliseconds(400))
        XCTAssertEqual(policy.backoff(beforeRetry: 10, jitter: 1), .seconds(1))
        XCTAssertEqual(policy.backoff(beforeRetry: 1000, jitter: 0.5), .milliseconds(500))
        XCTAssertEqual(policy.backoff(beforeRetry: 2, jitter: .nan), .zero)
        XCTAssertTrue(RetryPolicy.isIdempotent(method: "PUT"))
        XCTAssertFalse(RetryPolicy.isIdempotent(method: "POST"))
    }

    /// 2023-11-14T22:13:20Z: Apple's milliseconds 1700000000000.
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    /// Every form of `Retry-After`, measured from `now`.
    func testRetryAfterForms() {
        let rows: [(value: String, expected: Duration?)] = [
            // delta-seconds (RFC 9110 §10.2.3)
            (" 120 ", .seconds(120)),
            ("0", .zero),
            ("86400", .seconds(86_400)),
            // HTTP-date, all three forms a recipient must accept (RFC 9110 §5.6.7)
            ("Tue, 14 Nov 2023 22:14:20 GMT", .seconds(60)),
            ("Tuesday, 14-Nov-23 22:14:20 GMT", .seconds(60)),
            ("Tue Nov 14 22:14:20 2023", .seconds(60)),
            ("Fri, 01 Mar 2024 00:00:00 GMT", .seconds(86_400)),      // months ahead: the ceiling
            // the App Store Server API's UNIX time in milliseconds ("Identifying rate limits")
            ("1700000002500", .milliseconds(2500)),
            ("1700000000001", .milliseconds(1)),
            // past: zero, never negative
            ("1699999999000", .zero),
            ("Wed, 21 Oct 2015 07:28:00 GMT", .zero),
            ("100000000000", .zero),                                  // 1973 in ms
            // huge: capped at the ceiling, no overflow
            ("99999999999", .seconds(86_400)),                        // delta-seconds just below the ms threshold
            ("999999999999999999", .seconds(86_400)),                 // ms, far future
            ("99999999999999999999999999", .seconds(86_400)),         // beyond Int64
            // garbage: nil (the caller backs off)
            ("", nil), ("-1", nil), ("1.5", nil), ("soon", nil), ("0x10", nil), ("+5", nil),
            ("Tue, 14 Nov 2023 25:14:20 GMT", nil), ("Tue, 14 Foo 2023 22:14:20 GMT", nil),
            ("Tue, 14 Nov 2023 22:14:20 PST", nil), ("Tue, 14 Nov 2023 22:14 GMT", nil),
            // no such day (was read as the day it overflows to: 30 Feb 2024 as 1 Mar 2024)
            ("Fri, 30 Feb 2024 00:00:00 GMT", nil), ("Thu, 31 Apr 2025 00:00:00 GMT", nil), ("Sat Feb 29 00:00:00 2025", nil),
            ("Thu, 29 Feb 2024 00:00:00 GMT", .seconds(86_400)),
            (String(repeating: "9", count: 65), nil),
        ]
        for row in rows {
            XCTAssertEqual(RetryPolicy.delay(retryAfter: row.value, now: Self.now), row.expected, row.value)
        }
        XCTAssertEqual(RetryPolicy.retryAfterCeiling, .seconds(86_400))
        XCTAssertEqual(RetryPolicy.wholeSeconds(.milliseconds(2500)), 3)
        XCTAssertEqual(RetryPolicy.wholeSeconds(.zero), 1)
        XCTAssertEqual(RetryPolicy.wholeSeconds(.seconds(7)), 7)
    }
}
