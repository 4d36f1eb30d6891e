public import Foundation

/// When `BouncerClient` repeats a call that got `503 Service Unavailable` or `429 Too Many Requests`.
///
/// Both answers say nothing about the purchase, and every Bouncer call is idempotent (a purchase posted twice is
/// recorded once), so repeating is safe. The wait is the answer's `Retry-After` (delta seconds), else an
/// exponential backoff; a wait that would pass `maxTotalWait` is not taken: the error is thrown at once.
public struct RetryPolicy: Hashable, Sendable {
    /// Requests per call, the first included (1 = never retry).
    public var maxAttempts: Int
    /// Seconds all waits of one call may add up to.
    public var maxTotalWait: TimeInterval
    /// Wait before the first retry when the answer has no usable `Retry-After`; doubled on each retry.
    public var initialBackoff: TimeInterval

    /// A policy; values are clamped to sane ranges (at least one attempt, no negative waits).
    public init(maxAttempts: Int = 3, maxTotalWait: TimeInterval = 10, initialBackoff: TimeInterval = 0.5) {
        self.maxAttempts = max(1, maxAttempts)
        self.maxTotalWait = maxTotalWait.isFinite ? max(0, maxTotalWait) : 0
        self.initialBackoff = initialBackoff.isFinite ? max(0, initialBackoff) : 0
    }

    /// 3 attempts, at most 10 s of waiting in all.
    public static let `default` = RetryPolicy()
    /// One attempt: every error is thrown as it arrives.
    public static let never = RetryPolicy(maxAttempts: 1, maxTotalWait: 0)

    /// Seconds to wait before attempt `attempt + 1` after `status` with `retryAfter`, having waited `waited` so far;
    /// `nil` when the call must not be repeated.
    public func delay(afterAttempt attempt: Int, status: Int, retryAfter: TimeInterval?, waited: TimeInterval) -> TimeInterval? {
        guard status == 503 || status == 429, attempt >= 1, attempt < maxAttempts else { return nil }
        let wait: TimeInterval
        if let retryAfter {
            wait = retryAfter
        } else {
            // 2^(attempt-1) without overflow: attempts are few, but the shift is bounded anyway.
            wait = initialBackoff * Double(1 << min(attempt - 1, 20))
        }
        guard wait.isFinite, wait >= 0, waited + wait <= maxTotalWait else { return nil }
        return wait
    }

    /// `Retry-After` as delta seconds (RFC 9110 §10.2.3); `nil` for an HTTP date or garbage (the backoff applies).
    public static func parseRetryAfter(_ value: String?) -> TimeInterval? {
        guard let value else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 10, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let seconds = Int(trimmed) else { return nil }
        return TimeInterval(seconds)
    }
}
