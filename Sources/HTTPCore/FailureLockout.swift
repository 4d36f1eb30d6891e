import Primitives

/// Counts failed authentications per key (a client address) and locks the key out once it fails too often.
///
/// The rule: `maxFailures` failures within `window` lock the key for `initialLockout`; each further lockout of the
/// same key (before it succeeds, or stays quiet for `maxLockout`) lasts twice as long as the previous one, up to
/// `maxLockout`. A success forgets the key. Callers ask `check` *before* comparing the presented secret, so a locked
/// key learns nothing about it, and a guess costs no hashing.
///
/// Memory is bounded by `maxKeys`: when full, keys that are neither locked nor recently failing go first, then the
/// stalest unlocked ones; an evicted key restarts with a clean slate (the attacker gains at most one window of guesses
/// per eviction, and evicting needs `maxKeys` addresses failing at once).
public final class FailureLockout: Sendable {
    /// How many failures lock a key, over what window, and for how long.
    struct Policy: Sendable, Equatable {
        /// Failures allowed within `windowSeconds`; the next one is refused.
        var maxFailures: Int
        /// The window the failures are counted over.
        var windowSeconds: Int
        /// The first lockout's length; it doubles with each further one.
        var initialLockoutSeconds: Int
        /// The longest lockout; also how long a key must stay quiet before its doubling is forgotten.
        var maxLockoutSeconds: Int

        /// A policy; every value is clamped to at least 1.
        init(maxFailures: Int, windowSeconds: Int, initialLockoutSeconds: Int, maxLockoutSeconds: Int) {
            self.maxFailures = max(1, maxFailures)
            self.windowSeconds = max(1, windowSeconds)
            self.initialLockoutSeconds = max(1, initialLockoutSeconds)
            self.maxLockoutSeconds = max(self.initialLockoutSeconds, maxLockoutSeconds)
        }

        /// 10 failures a minute, then 60 s, 120 s, 240 s … up to an hour.
        static let standard = Policy(maxFailures: 10, windowSeconds: 60, initialLockoutSeconds: 60,
                                            maxLockoutSeconds: 3600)
    }

    struct Entry {
        /// Failures in the current window.
        var failures: Int
        /// Monotonic ns when the current window began.
        var windowStart: UInt64
        /// Monotonic ns until which the key is locked (0 = not locked).
        var lockedUntil: UInt64
        /// The length of the last lockout in seconds (0 = none yet): the next one doubles it.
        var lastLockoutSeconds: Int
        /// Monotonic ns of the last failure (for eviction and for forgetting the doubling).
        var lastFailure: UInt64
    }

    private let state: Locked<[String: Entry]>
    private let maxKeys: Int
    /// The rule in force.
    let policy: Policy
    private let clock: @Sendable () -> UInt64

    /// - Parameters:
    ///   - maxKeys: keys tracked at most (default 10,000).
    ///   - clock: monotonic nanoseconds; nil = `CLOCK_MONOTONIC`; tests inject a fake one.
    public init(maxKeys: Int = 10_000, clock: (@Sendable () -> UInt64)? = nil) {
        self.policy = .standard
        self.maxKeys = max(1, maxKeys)
        self.clock = clock ?? { monotonicNanos() }
        state = Locked([:])
    }

    /// Keys currently tracked (for tests and diagnostics).
    public var keyCount: Int { state.withLock { $0.count } }

    /// Nil when `key` may try; else whole seconds (at least 1) until it may try again (`Retry-After`).
    public func check(_ key: String) -> Int? {
        let now = clock()
        return state.withLock { entries in
            guard let entry = entries[key], entry.lockedUntil > now else { return nil }
            return max(1, RateLimiter.ceilSeconds(Double(entry.lockedUntil - now) / 1_000_000_000))
        }
    }

    /// Records a failed attempt by `key`; returns the lockout's seconds when this failure locked the key.
    @discardableResult
    public func recordFailure(_ key: String) -> Int? {
        let now = clock()
        let window = Self.nanos(policy.windowSeconds)
        let quiet = Self.nanos(policy.maxLockoutSeconds)
        return state.withLock { entries -> Int? in
            var entry: Entry
            if let existing = entries[key] {
                entry = existing
                // A key quiet for the longest lockout (after its last failure and its last lockout) starts over: old
                // mistakes do not double a new lockout forever.
                let quietSince = max(entry.lastFailure, entry.lockedUntil)
                if now >= quietSince, now - quietSince >= quiet { entry.lastLockoutSeconds = 0 }
                if now &- entry.windowStart >= window || entry.lockedUntil != 0 && entry.lockedUntil <= now {
                    entry.failures = 0
                    entry.windowStart = now
                    entry.lockedUntil = 0
                }
            } else {
                if entries.count >= maxKeys { Self.evict(&entries, now: now, window: window, keep: maxKeys) }
                entry = Entry(failures: 0, windowStart: now, lockedUntil: 0, lastLockoutSeconds: 0, lastFailure: now)
            }
            entry.failures += 1
            entry.lastFailure = now
            var locked: Int?
            if entry.failures >= policy.maxFailures, entry.lockedUntil <= now {
                let seconds = entry.lastLockoutSeconds == 0
                    ? policy.initialLockoutSeconds
                    : min(policy.maxLockoutSeconds, entry.lastLockoutSeconds.multipliedReportingOverflow(by: 2).partialValue)
                entry.lastLockoutSeconds = max(policy.initialLockoutSeconds, seconds)
                entry.lockedUntil = now &+ Self.nanos(entry.lastLockoutSeconds)
                locked = entry.lastLockoutSeconds
            }
            entries[key] = entry
            return locked
        }
    }

    /// Forgets `key` (a success).
    public func recordSuccess(_ key: String) {
        state.withLock { entries in
            if entries[key] != nil { entries[key] = nil }
        }
    }

    /// Frees room: keys neither locked nor failing within the window go first, then the least recently failing
    /// quarter, unlocked keys first.
    static func evict(_ entries: inout [String: Entry], now: UInt64, window: UInt64, keep: Int) {
        entries = entries.filter { $0.value.lockedUntil > now || now &- $0.value.lastFailure < window }
        guard entries.count >= keep else { return }
        // Unlocked keys before locked ones, each stalest first: evicting a locked key would unlock it.
        let stalest = entries.sorted { a, b in
            let aLocked = a.value.lockedUntil > now
            let bLocked = b.value.lockedUntil > now
            return aLocked != bLocked ? bLocked : a.value.lastFailure < b.value.lastFailure
        }.prefix(max(1, keep / 4))
        for (key, _) in stalest { entries[key] = nil }
    }

    static func nanos(_ seconds: Int) -> UInt64 { UInt64(max(0, seconds)).multipliedReportingOverflow(by: 1_000_000_000).partialValue }
}
