public import Domain
import Foundation
public import HTTPCore
import Synchronization

/// Guards each project's App Store Server API quota against `POST /v1/receipts/:publicKey` with `transaction_id`:
/// the route needs only the public key, which ships inside apps, and an unknown id costs two calls to Apple with the
/// project's key (Production, then Sandbox).
///
/// Every call to Apple a lookup would make takes a token from the client address's bucket, then from the project's
/// (token buckets, per process like `BOUNCER_RATE_LIMIT_*`); an empty bucket refuses the lookup with 429
/// `APPLE_LOOKUP_RATE_LIMITED` and `Retry-After` before Apple is called. Apple's "not found" is remembered per
/// project, environment and id for `notFoundTTL`, so repeating an unknown id costs no call and no token. Only "not
/// found" is remembered: an outage, a refused key or Apple's own rate limit says nothing about the id.
public final class LookupBudget: Sendable {
    /// The limits, from `BOUNCER_APPLE_LOOKUP_*`.
    public struct Settings: Sendable, Equatable {
        /// Calls to Apple per project (nil: unlimited).
        public var perProject: RateLimit?
        /// Calls to Apple per client address (nil: unlimited).
        public var perClient: RateLimit?
        /// How long Apple's "not found" is believed (zero: not remembered).
        public var notFoundTTL: Duration
        /// Most "not found" answers remembered at once (the oldest are forgotten first).
        public var maxRemembered: Int

        /// 5 calls/s per project in bursts of 50 (Apple allows 50/s per app in Production, 5/s in Sandbox), 0.5/s
        /// per client address in bursts of 10, "not found" remembered for 120 s, at most 10,000 of them.
        public init(perProject: RateLimit? = RateLimit(rate: 5, burst: 50), perClient: RateLimit? = RateLimit(rate: 0.5, burst: 10),
                    notFoundTTL: Duration = .seconds(120), maxRemembered: Int = 10_000) {
            self.perProject = perProject
            self.perClient = perClient
            self.notFoundTTL = notFoundTTL
            self.maxRemembered = max(0, maxRemembered)
        }
    }

    /// The limits in force.
    public let settings: Settings
    private let limiter: RateLimiter
    private let missing: Mutex<NotFoundMemory>
    private let clock: @Sendable () -> UInt64

    /// - Parameter clock: monotonic nanoseconds for the buckets and the memory; nil = `ContinuousClock`.
    public init(settings: Settings = Settings(), clock: (@Sendable () -> UInt64)? = nil) {
        let clock = clock ?? Self.continuousNanos()
        self.settings = settings
        self.clock = clock
        limiter = RateLimiter(maxKeys: 100_000, clock: clock)
        missing = Mutex(NotFoundMemory(capacity: settings.maxRemembered))
    }

    /// The budget as one request sees it: `clientKey` (`Request.clientKey`, IPv6 by its /64) picks the per-client bucket.
    public func forClient(_ clientKey: String) -> any LookupBudgeting {
        ClientLookupBudget(budget: self, clientKey: "lookup-client:" + clientKey)
    }

    /// "Not found" answers held now (tests, diagnostics).
    public var rememberedCount: Int { missing.withLock { $0.count(now: clock()) } }

    fileprivate func spend(projectId: UUID, clientKey: String) throws {
        if let limit = settings.perClient {
            let decision = limiter.acquire(clientKey, limit: limit)
            if !decision.allowed { throw HTTPError.appleLookupRateLimited(decision, perClient: true) }
        }
        if let limit = settings.perProject {
            let decision = limiter.acquire("lookup-project:\(projectId.uuidString)", limit: limit)
            if !decision.allowed { throw HTTPError.appleLookupRateLimited(decision, perClient: false) }
        }
    }

    fileprivate func isKnownMissing(_ key: String) -> Bool {
        let now = clock()
        return missing.withLock { $0.contains(key, now: now) }
    }

    fileprivate func rememberMissing(_ key: String) {
        guard settings.notFoundTTL > .zero else { return }
        let now = clock()
        let expiry = Self.saturatingAdd(now, Self.nanos(settings.notFoundTTL))
        missing.withLock { $0.insert(key, expiry: expiry, now: now) }
    }

    /// The memory's key: ids are digits only (`TransactionLookup.problems`), so the separator cannot be forged.
    fileprivate static func key(_ projectId: UUID, _ environment: StoreEnvironment, _ transactionId: String) -> String {
        "\(projectId.uuidString)|\(environment.rawValue)|\(transactionId)"
    }

    private static func continuousNanos() -> @Sendable () -> UInt64 {
        let origin = ContinuousClock.now
        return { nanos(ContinuousClock.now - origin) }
    }

    static func nanos(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        guard seconds < 1_000_000_000 else { return 1_000_000_000 * 1_000_000_000 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }

    private static func saturatingAdd(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }
}

/// One request's view of the budget: the Domain port, with the client's bucket chosen.
private struct ClientLookupBudget: LookupBudgeting {
    let budget: LookupBudget
    let clientKey: String

    func spend(projectId: UUID) throws { try budget.spend(projectId: projectId, clientKey: clientKey) }

    func isKnownMissing(projectId: UUID, environment: StoreEnvironment, transactionId: String) -> Bool {
        budget.isKnownMissing(LookupBudget.key(projectId, environment, transactionId))
    }

    func rememberMissing(projectId: UUID, environment: StoreEnvironment, transactionId: String) {
        budget.rememberMissing(LookupBudget.key(projectId, environment, transactionId))
    }
}

/// Keys with an expiry, bounded: every entry lives the same TTL, so insertion order is expiry order and a FIFO queue
/// both expires and evicts in O(1) amortised. A key noted again gets a new queue entry; the stale one is skipped.
struct NotFoundMemory {
    let capacity: Int
    private var expiries: [String: UInt64] = [:]
    private var queue: [(key: String, expiry: UInt64)] = []
    private var head = 0

    init(capacity: Int) { self.capacity = capacity }

    func contains(_ key: String, now: UInt64) -> Bool {
        guard let expiry = expiries[key] else { return false }
        return expiry > now
    }

    func count(now: UInt64) -> Int { expiries.values.filter { $0 > now }.count }

    /// Notes `key` until `expiry`; first forgets what expired by `now`, then the oldest while full.
    mutating func insert(_ key: String, expiry: UInt64, now: UInt64) {
        guard capacity > 0 else { return }
        while head < queue.count, expiries.count >= capacity || queue[head].expiry <= now || isStale(queue[head]) {
            drop()
        }
        expiries[key] = expiry
        queue.append((key, expiry))
        // Compact the queue's consumed prefix once it is the larger half (amortised O(1) per insert).
        if head > 1024, head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
    }

    /// True when the queue entry no longer decides its key (the key was noted again later).
    private func isStale(_ entry: (key: String, expiry: UInt64)) -> Bool { expiries[entry.key] != entry.expiry }

    private mutating func drop() {
        let entry = queue[head]
        head += 1
        if expiries[entry.key] == entry.expiry { expiries[entry.key] = nil }
    }
}
