public import Foundation

/// When to try a request again: bounded attempts, exponential backoff with full jitter, and the server's
/// `Retry-After` on 429/503 up to a cap. A value type with no I/O, so other clients (the App Store
/// Server API client) reuse it and tests check it as a table.
public struct RetryPolicy: Sendable {
    /// Total attempts including the first (1 = never retry).
    public var maxAttempts: Int
    /// Backoff before retry n (1-based) is uniform in [0, min(maxDelay, baseDelay · 2^(n-1))] ("full jitter").
    public var baseDelay: Duration
    /// Upper bound of a computed backoff.
    public var maxDelay: Duration
    /// The longest `Retry-After` honoured; a server asking for more ends the retries (the caller decides).
    public var maxRetryAfter: Duration
    /// Statuses retried with backoff for idempotent requests.
    public var retryableStatuses: Set<Int>

    /// Three attempts, 200 ms base, 5 s cap, `Retry-After` up to 30 s, retrying 500/502/503/504.
    public init(maxAttempts: Int = 3, baseDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(5),
                maxRetryAfter: Duration = .seconds(30), retryableStatuses: Set<Int> = [500, 502, 503, 504]) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
        self.retryableStatuses = retryableStatuses
    }

    /// Never retries.
    public static let never = RetryPolicy(maxAttempts: 1)

    /// What happened on one attempt.
    public enum Outcome: Sendable {
        /// A complete response with this status and `Retry-After` header value (if any).
        case response(status: Int, retryAfter: String?)
        /// A network failure (connect, timeout, broken connection) before a complete response.
        case networkFailure
    }

    /// The verdict for the next step.
    public enum Decision: Sendable, Equatable {
        /// Wait this long, then send again.
        case retry(after: Duration)
        /// Stop: return or throw what the last attempt produced.
        case stop
    }

    /// Decides after attempt number `attempt` (1-based). `jitter` is a uniform sample in [0, 1); `now` is the
    /// wall-clock instant an absolute `Retry-After` (an HTTP-date, Apple's milliseconds) is measured from.
    ///
    /// - Network failures and `retryableStatuses` are retried only for idempotent requests (RFC 9110 §9.2.2):
    ///   a POST that timed out may have been applied.
    /// - 429 is retried for any method (the server refused to process it), after `Retry-After` when given.
    /// - 503 with `Retry-After` waits as told (idempotent requests only).
    /// - A `Retry-After` above `maxRetryAfter` stops at once.
    public func decision(afterAttempt attempt: Int, idempotent: Bool, outcome: Outcome, jitter: Double,
                         now: Date) -> Decision {
        guard attempt < maxAttempts else { return .stop }
        switch outcome {
        case .networkFailure:
            return idempotent ? .retry(after: backoff(beforeRetry: attempt, jitter: jitter)) : .stop
        case .response(let status, let retryAfter):
            let honoursRetryAfter = status == 429 || (status == 503 && idempotent)
            if honoursRetryAfter, let retryAfter, let delay = Self.delay(retryAfter: retryAfter, now: now) {
                return delay <= maxRetryAfter ? .retry(after: delay) : .stop
            }
            if status == 429 || (idempotent && retryableStatuses.contains(status)) {
                return .retry(after: backoff(beforeRetry: attempt, jitter: jitter))
            }
            return .stop
        }
    }

    /// Full-jitter exponential backoff before retry `n` (1-based).
    public func backoff(beforeRetry n: Int, jitter: Double) -> Duration {
        let exponent = min(max(n - 1, 0), 30)
        var ceiling = baseDelay * (1 << exponent)
        if ceiling > maxDelay || ceiling < .zero { ceiling = maxDelay }
        let unit = jitter.isFinite ? min(max(jitter, 0), 1) : 0
        return ceiling * unit
    }

    /// The longest delay `delay(retryAfter:now:)` returns: anything later is "not in this process's lifetime of a
    /// call", and the bound keeps `Duration` arithmetic far from overflow.
    public static let retryAfterCeiling: Duration = .seconds(86_400)

    /// `Retry-After` as a delay from `now`, clamped to [0, `retryAfterCeiling`] (a time already past is zero);
    /// nil when the value is unreadable (the caller falls back to backoff). Three forms are read:
    /// - delta-seconds (RFC 9110 §10.2.3), e.g. `120`; too many digits to count is the ceiling (RFC 9111 §1.2.2);
    /// - an HTTP-date (RFC 9110 §5.6.7: IMF-fixdate and the two obsolete forms a recipient must accept);
    /// - the App Store Server API's UNIX time in milliseconds, e.g. `1700000000000` (Apple's "Identifying rate
    ///   limits"). Numbers from 10^11 up are read this way: as seconds they would be 3,000 years, and as
    ///   milliseconds anything smaller is before 1974, so the two forms cannot be confused in practice.
    public static func delay(retryAfter value: String, now: Date) -> Duration? {
        let text = value.trimmingOWS
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        if text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
            guard text.utf8.count <= 18, let number = Int64(text) else { return retryAfterCeiling }
            if number < appleMillisecondsThreshold { return clamped(seconds: Double(number)) }
            return clamped(seconds: Double(number) / 1000 - now.timeIntervalSince1970)
        }
        guard let date = HTTPDate.parse(text) else { return nil }
        return clamped(seconds: Double(date) - now.timeIntervalSince1970)
    }

    /// Where digits stop meaning delta-seconds and start meaning Apple's milliseconds since 1970.
    static let appleMillisecondsThreshold: Int64 = 100_000_000_000

    private static func clamped(seconds: Double) -> Duration {
        guard seconds.isFinite, seconds > 0 else { return .zero }
        let ceiling = Double(retryAfterCeiling.components.seconds)
        guard seconds < ceiling else { return retryAfterCeiling }
        return .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    /// Whole seconds of a `Retry-After` delay for reporting onward: rounded up, at least 1.
    public static func wholeSeconds(_ delay: Duration) -> Int {
        let (seconds, attoseconds) = delay.components
        return max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }

    /// GET, HEAD, PUT, DELETE, OPTIONS and TRACE (RFC 9110 §9.2.2).
    public static func isIdempotent(method: String) -> Bool {
        ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"].contains(method)
    }
}
