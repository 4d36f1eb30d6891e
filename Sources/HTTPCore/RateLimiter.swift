import Primitives

/// A token-bucket rate: `rate` tokens per second refill a bucket holding at most `burst`; a request takes one.
public struct RateLimit: Sendable, Hashable {
    /// Sustained requests per second (> 0).
    public var rate: Double
    /// Bucket size: requests allowed back to back after an idle period (≥ 1).
    public var burst: Int

    /// A limit of `rate` per second with bursts of `burst` (clamped to at least 1).
    public init(rate: Double, burst: Int) {
        self.rate = rate
        self.burst = max(1, burst)
    }
}

/// The answer for one request, with what the `RateLimit-*` and `Retry-After` headers need.
public struct RateLimitDecision: Sendable, Equatable {
    /// True when a token was taken and the request may proceed.
    public var allowed: Bool
    /// The bucket size (`RateLimit-Limit`).
    public var limit: Int
    /// Whole tokens left after this request (`RateLimit-Remaining`).
    public var remaining: Int
    /// Whole seconds, rounded up, until the bucket is full again (`RateLimit-Reset`).
    public var resetSeconds: Int
    /// Whole seconds, rounded up and at least 1, until one token is available (`Retry-After`); 0 when allowed.
    public var retryAfterSeconds: Int
}

/// Token buckets keyed by strings (callers prefix a scope, e.g. `client:10.0.0.7`), in process memory.
///
/// Memory is bounded: at most `maxKeys` buckets. When a shard is full, buckets that have refilled completely
/// are dropped first (losing nothing: a full bucket is what a new key gets); if every bucket is busy, the least
/// recently used quarter of the shard goes (those keys restart with a full burst). Keys are spread over 16
/// shards, each behind its own pthread mutex, so I/O threads rarely meet on a lock.
public final class RateLimiter: Sendable {
    struct Bucket {
        var tokens: Double
        /// Monotonic ns of the last refill.
        var updated: UInt64
        /// Monotonic ns when the bucket will be full (then it may be evicted without loss).
        var fullAt: UInt64
    }

    private let shards: [Locked<[String: Bucket]>]
    private let maxKeysPerShard: Int
    private let clock: @Sendable () -> UInt64

    /// - Parameters:
    ///   - maxKeys: buckets kept in memory at most (default 100,000; ~100 bytes each plus the key).
    ///   - clock: monotonic nanoseconds; nil = `CLOCK_MONOTONIC`; tests inject a fake one.
    public init(maxKeys: Int = 100_000, clock: (@Sendable () -> UInt64)? = nil) {
        let shardCount = 16
        shards = (0..<shardCount).map { _ in Locked([:]) }
        maxKeysPerShard = max(1, maxKeys / shardCount)
        self.clock = clock ?? { monotonicNanos() }
    }

    /// Buckets currently held (for tests and diagnostics).
    public var keyCount: Int { shards.reduce(0) { $0 + $1.withLock { $0.count } } }

    /// Takes one token from `key`'s bucket under `limit` (a key's first request finds a full bucket).
    public func acquire(_ key: String, limit: RateLimit) -> RateLimitDecision {
        let rate = limit.rate
        let burst = Double(limit.burst)
        guard rate > 0, rate.isFinite else {
            return RateLimitDecision(allowed: true, limit: limit.burst, remaining: limit.burst, resetSeconds: 0,
                                     retryAfterSeconds: 0)
        }
        let now = clock()
        let shard = shards[Int(UInt(bitPattern: key.hashValue) % UInt(shards.count))]
        return shard.withLock { buckets -> RateLimitDecision in
            var bucket: Bucket
            if let existing = buckets[key] {
                bucket = existing
                let elapsed = now > bucket.updated ? Double(now - bucket.updated) / 1_000_000_000 : 0
                bucket.tokens = min(burst, bucket.tokens + elapsed * rate)
            } else {
                if buckets.count >= maxKeysPerShard { Self.evict(&buckets, now: now, keep: maxKeysPerShard) }
                bucket = Bucket(tokens: burst, updated: now, fullAt: now)
            }
            bucket.updated = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            let toFull = (burst - bucket.tokens) / rate
            bucket.fullAt = now &+ Self.nanos(toFull)
            buckets[key] = bucket
            return RateLimitDecision(
                allowed: allowed, limit: limit.burst, remaining: Int(bucket.tokens.rounded(.down)),
                resetSeconds: Self.ceilSeconds(toFull),
                retryAfterSeconds: allowed ? 0 : max(1, Self.ceilSeconds((1 - bucket.tokens) / rate)))
        }
    }

    /// Frees room in a full shard: refilled buckets first, then the least recently used quarter.
    static func evict(_ buckets: inout [String: Bucket], now: UInt64, keep: Int) {
        buckets = buckets.filter { $0.value.fullAt > now }
        guard buckets.count >= keep else { return }
        let stalest = buckets.sorted { $0.value.updated < $1.value.updated }.prefix(max(1, keep / 4))
        for (key, _) in stalest { buckets[key] = nil }
    }

    /// Seconds rounded up, saturating (a tiny rate must not overflow `Int`). A hair of float noise
    /// (1e-9 s) is forgiven so that exactly one second does not become two.
    static func ceilSeconds(_ seconds: Double) -> Int {
        guard seconds > 1e-9 else { return 0 }
        guard seconds < 1e9 else { return 1_000_000_000 }
        return Int((seconds - 1e-9).rounded(.up))
    }

    static func nanos(_ seconds: Double) -> UInt64 {
        guard seconds > 0 else { return 0 }
        guard seconds < 1e9 else { return 1_000_000_000 * 1_000_000_000 }
        return UInt64(seconds * 1_000_000_000)
    }
}
