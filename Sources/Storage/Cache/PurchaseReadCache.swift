import Domain
import Dispatch
import Foundation
import Synchronization

/// The bound purchases of recently read users (per project and user), so `GET /v1/subscriptions` is answered
/// without a round trip; what they mean at an instant (`StatusRules`, with `now`) is still computed at read time,
/// so an entry never outlives an `expires_date` it holds.
///
/// An entry stays only while it can be proved current: it is dropped by every invalidation that can change it
/// (`CacheMessage`: the user's bindings, any purchase it holds — found through a reverse index —, its project),
/// it expires at most `maxAge` after its query began (the bound when an announcement is lost: a writer that died
/// between commit and its announcement), each entry at a random point of the last half of that span, so users first
/// read together (a cold start, the channel coming back) do not all expire, and miss, together again every `maxAge`
/// (bench/api saw all 5,000 of its users miss in the same half second every 10 s); and the whole cache is off while the invalidation channel is down (`setEnabled`).
/// A read racing a write cannot fill a stale entry: each fill carries the invalidation sequence seen before its
/// query and is refused when a later invalidation in `recent` touches it.
///
/// Misses for one user share one query (`read`/`finish`, a single flight): the first reader queries, the readers
/// arriving meanwhile wait for its answer, and take it only when its fill was accepted, i.e. no invalidation since
/// the query began touches it (so a reader that arrived after a write's announcement never gets an answer read
/// before that write); otherwise each queries on its own. Without it, the first reads after a cold start or an
/// expiry queued one query per waiting request for the same user behind the database pool.
///
/// Entries are refreshed ahead of their expiry: a hit on an entry past its refresh point (three quarters of its life,
/// so between 3/8 and 3/4 of `maxAge` after its query began: a hot user costs a query about every 5.6 s at the
/// default 10 s, against every 7.5 s when it expires; at half its life bench/api saw 1.5 times main's queries) is
/// still served, and queues one background re-read of the user (the query `CachedPurchaseStore` attaches with
/// `attachRefresh`), at most one per user at a time, on at most
/// `refreshWorkers` threads of Dispatch's pool (never the request's worker or an event loop), with at most
/// `refreshQueueCapacity` waiting (a refresh that finds the queue full is dropped and counted: the entry then
/// expires as it would have). The re-read's answer replaces the entry through `fill`, with the ticket taken before
/// its query, so a write announced since the refresh began wins (the answer is discarded, the entry stays dropped).
/// The new entry's life restarts at the refresh's query, so a user read at least once in every last quarter of its
/// entry's life (at least `maxAge / 8`) never misses, and no entry is served later than `maxAge` after the query
/// that read it.
public final class PurchaseReadCache: Sendable {
    struct UserKey: Hashable {
        let projectId: UUID
        let userId: String
    }
    struct PurchaseKey: Hashable {
        let projectId: UUID
        let environment: String
        let originalTransactionId: String
    }
    struct Entry {
        var holdings: UserHoldings
        var owned: [OwnedPurchase] { holdings.purchases }
        /// Three quarters of the way from the query's start to `expiresAt`: a hit from then on queues a refresh.
        var refreshAt: ContinuousClock.Instant
        /// Between `maxAge / 2` and `maxAge` after the query began.
        var expiresAt: ContinuousClock.Instant
    }
    /// A user whose entry a background query re-reads.
    struct Refresh {
        let key: UserKey
        let project: Project
    }
    /// Background refreshes: waiting, running, and what became of them.
    struct Refreshes {
        /// Waiting for a worker, oldest first; at most `refreshQueueCapacity`.
        var queue: [Refresh] = []
        /// Users queued or being re-read (one refresh per user at a time).
        var pending: Set<UserKey> = []
        /// Workers draining `queue`, at most `refreshWorkers`.
        var workers = 0
        /// Re-reads a user; until it is attached, no refresh is queued.
        var query: PurchaseReadCache.ReadQuery?
        var counts = RefreshCounts()
    }
    /// What a fill must check it missed: invalidations newer than its ticket.
    enum Invalidation {
        case user(UserKey), purchase(PurchaseKey), project(UUID), all
    }
    struct State {
        var enabled = false
        var entries: LRU<UserKey, Entry>
        var holders: [PurchaseKey: Set<UserKey>] = [:]
        var sequence: UInt64 = 0
        /// The last `recentCapacity` invalidations, oldest first, with their sequence numbers.
        var recent: [(UInt64, Invalidation)] = []
        /// The queries in flight, one per user at most (bounded by the threads reading).
        var flights: [UserKey: Flight] = [:]
        var hits = 0
        var misses = 0
        /// Readers that waited for another reader's query instead of sending their own.
        var joined = 0
        var refreshes = Refreshes()
    }

    /// One reader's query for a user, which later readers of that user wait for.
    final class Flight: Sendable {
        /// The invalidation sequence taken before the query.
        let ticket: UInt64
        private let outcome = Mutex<Outcome?>(nil)
        private let done = DispatchSemaphore(value: 0)
        /// Readers waiting; only changed under the cache's lock while the flight is in `flights`.
        let waiting = Atomic<Int>(0)

        enum Outcome {
            /// The query's answer, current for every reader that joined (its fill was accepted).
            case current(UserHoldings)
            /// A write touched the user since the query began: each reader queries on its own.
            case stale
            case failed(any Error)
        }

        init(ticket: UInt64) { self.ticket = ticket }

        /// Blocks until the querying reader finishes. Bounded by its query's own deadlines (the pool's acquire
        /// timeout, the statement timeout): `finish` runs on every path out of the query.
        func wait() -> Outcome {
            done.wait()
            return outcome.withLock { $0 } ?? .stale
        }

        fileprivate func settle(_ result: Outcome, waiters: Int) {
            outcome.withLock { $0 = result }
            for _ in 0..<waiters { done.signal() }
        }
    }

    /// What a reader does: answer from memory, query (and let others wait for it), wait for another's query, or
    /// query alone (the cache is off).
    enum Read {
        case hit(UserHoldings)
        case query(Flight)
        case wait(Flight)
        case alone(ticket: UInt64)
    }

    /// What became of the refreshes since start.
    public struct RefreshCounts: Sendable, Equatable {
        /// Re-read and stored: the entry's life restarted.
        public var refreshed = 0
        /// Re-read, but a write announced since the refresh began touches the user (or the cache went off): dropped.
        public var discarded = 0
        /// Not queued: the queue was full.
        public var dropped = 0
        /// The query failed (the entry expires as it would have).
        public var failed = 0
        public init(refreshed: Int = 0, discarded: Int = 0, dropped: Int = 0, failed: Int = 0) {
            self.refreshed = refreshed
            self.discarded = discarded
            self.dropped = dropped
            self.failed = failed
        }
    }

    private let state: Mutex<State>
    private let maxAge: Duration
    private let refreshWorkers: Int
    private let refreshQueueCapacity: Int
    private let clock: @Sendable () -> ContinuousClock.Instant
    private let spread: @Sendable () -> Double
    static let recentCapacity = 4_096

    /// A cache of at most `capacity` users (least recently used evicted first), entries at most `maxAge` old,
    /// refreshed ahead by at most `refreshWorkers` background queries with at most `refreshQueueCapacity` waiting.
    /// It starts disabled: the owner enables it once the invalidation channel listens. `now` and `spread` (where in
    /// the last half of `maxAge` an entry expires, 0...1) are for tests.
    public init(capacity: Int, maxAge: Duration, refreshWorkers: Int = 2, refreshQueueCapacity: Int = 256,
                now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
                spread: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        state = Mutex(State(entries: LRU(capacity: max(1, capacity))))
        self.maxAge = maxAge
        self.refreshWorkers = max(0, refreshWorkers)
        self.refreshQueueCapacity = max(0, refreshQueueCapacity)
        self.clock = now
        self.spread = spread
    }

    /// (hits, misses) since start.
    public var counts: (hits: Int, misses: Int) { state.withLock { ($0.hits, $0.misses) } }

    /// What became of the refreshes since start.
    public var refreshCounts: RefreshCounts { state.withLock { $0.refreshes.counts } }

    /// How a refresh re-reads a user (`CachedPurchaseStore` attaches its query).
    func attachRefresh(_ query: @escaping @Sendable (Project, String) throws -> UserHoldings) {
        state.withLock { $0.refreshes.query = query }
    }

    /// Misses that waited for another reader's query of the same user instead of sending their own, since start.
    public var joinedMisses: Int { state.withLock { $0.joined } }

    /// Turns the cache on or off; either way every entry is dropped (off: the channel is down and messages may be
    /// lost; on: it has just come back, and what was missed is unknown).
    public func setEnabled(_ enabled: Bool) {
        state.withLock { s in
            s.enabled = enabled
            s.entries.removeAll()
            s.holders = [:]
            s.record(.all)
        }
    }

    /// The user's cached purchases, if a current entry exists.
    func lookup(projectId: UUID, userId: String) -> [OwnedPurchase]? {
        lookupHoldings(projectId: projectId, userId: userId)?.purchases
    }

    /// Stores purchases only (no app transactions); see `fill(projectId:userId:holdings:ticket:at:)`.
    func fill(projectId: UUID, userId: String, owned: [OwnedPurchase], ticket: UInt64, at filledAt: ContinuousClock.Instant) {
        fill(projectId: projectId, userId: userId, holdings: UserHoldings(purchases: owned, appTransactions: []),
             ticket: ticket, at: filledAt)
    }

    /// What the user holds, if a current entry exists.
    func lookupHoldings(projectId: UUID, userId: String) -> UserHoldings? {
        let now = clock()
        return state.withLock { s in
            guard s.enabled else { return nil }
            let key = UserKey(projectId: projectId, userId: userId)
            guard let entry = s.entries.get(key) else {
                s.misses += 1
                return nil
            }
            guard now < entry.expiresAt else {
                s.remove(key)
                s.misses += 1
                return nil
            }
            s.hits += 1
            return entry.holdings
        }
    }

    /// A hit, or the flight to query in or wait for (see the type's documentation). A `.query` must be `finish`ed.
    /// A hit past its entry's refresh point queues the user's refresh.
    func read(project: Project, userId: String) -> Read {
        let now = clock()
        var startWorker = false
        let read = state.withLock { s -> Read in
            guard s.enabled else { return .alone(ticket: s.sequence) }
            let key = UserKey(projectId: project.id, userId: userId)
            if let holdings = hit(&s, key, project: project, at: now, startWorker: &startWorker) { return .hit(holdings) }
            s.remove(key)  // expired (or absent: nothing to remove)
            s.misses += 1
            if let flight = s.flights[key] {
                flight.waiting.add(1, ordering: .relaxed)
                s.joined += 1
                return .wait(flight)
            }
            let flight = Flight(ticket: s.sequence)
            s.flights[key] = flight
            return .query(flight)
        }
        if startWorker { DispatchQueue.global(qos: .utility).async { self.drainRefreshes() } }
        return read
    }

    /// The user's holdings when a current entry exists, as `read`'s hit (counted, a refresh queued past the entry's
    /// refresh point); nil otherwise, with nothing counted, so the caller can `read` as if it had not asked.
    func current(project: Project, userId: String) -> UserHoldings? {
        let now = clock()
        var startWorker = false
        let holdings = state.withLock { s -> UserHoldings? in
            guard s.enabled else { return nil }
            return hit(&s, UserKey(projectId: project.id, userId: userId), project: project, at: now,
                       startWorker: &startWorker)
        }
        if startWorker { DispatchQueue.global(qos: .utility).async { self.drainRefreshes() } }
        return holdings
    }

    /// A current entry's holdings, counted as a hit, its refresh queued past its refresh point (`startWorker` set
    /// when a refresh worker should start); nil when there is none or it expired (left in place).
    private func hit(_ s: inout State, _ key: UserKey, project: Project, at now: ContinuousClock.Instant,
                     startWorker: inout Bool) -> UserHoldings? {
        guard let entry = s.entries.get(key), now < entry.expiresAt else { return nil }
        s.hits += 1
        if now >= entry.refreshAt {
            startWorker = s.queueRefresh(Refresh(key: key, project: project), capacity: refreshQueueCapacity,
                                         workers: refreshWorkers)
        }
        return entry.holdings
    }

    /// One refresh worker: re-reads the queued users one by one, each with the ticket taken before its query, and
    /// stops when the queue is empty.
    private func drainRefreshes() {
        while let (refresh, ticket, query) = state.withLock({ s -> (Refresh, UInt64, ReadQuery)? in
            guard let query = s.refreshes.query, !s.refreshes.queue.isEmpty else {
                s.refreshes.workers -= 1
                return nil
            }
            return (s.refreshes.queue.removeFirst(), s.sequence, query)
        }) {
            let startedAt = clock()
            var outcome = RefreshOutcome.failed
            if let holdings = try? query(refresh.project, refresh.key.userId) {
                outcome = fill(projectId: refresh.key.projectId, userId: refresh.key.userId, holdings: holdings,
                               ticket: ticket, at: startedAt) ? .refreshed : .discarded
            }
            state.withLock { s in
                s.refreshes.pending.remove(refresh.key)
                switch outcome {
                case .refreshed: s.refreshes.counts.refreshed += 1
                case .discarded: s.refreshes.counts.discarded += 1
                case .failed: s.refreshes.counts.failed += 1
                }
            }
        }
    }

    private enum RefreshOutcome { case refreshed, discarded, failed }
    typealias ReadQuery = @Sendable (Project, String) throws -> UserHoldings

    /// Ends `flight` with its query's result: fills the cache (as `fill`) and hands the answer to the waiting
    /// readers when the fill was accepted.
    func finish(_ flight: Flight, projectId: UUID, userId: String, result: Result<UserHoldings, any Error>,
                at filledAt: ContinuousClock.Instant) {
        var outcome = Flight.Outcome.stale
        switch result {
        case .success(let holdings):
            if fill(projectId: projectId, userId: userId, holdings: holdings, ticket: flight.ticket, at: filledAt) {
                outcome = .current(holdings)
            }
        case .failure(let error):
            outcome = .failed(error)
        }
        let key = UserKey(projectId: projectId, userId: userId)
        let waiters = state.withLock { s -> Int in
            if s.flights[key] === flight { s.flights[key] = nil }
            return flight.waiting.load(ordering: .relaxed)
        }
        flight.settle(outcome, waiters: waiters)
    }

    /// The ticket a reader takes before querying, handed back to `fill`.
    func ticket() -> UInt64 { state.withLock { $0.sequence } }

    /// Stores what a query begun at `ticket` read, unless an invalidation since then touches it (false). App
    /// transactions are invalidated through their users (`CacheMessage.user`) or the project (`allUsers`), never by
    /// purchase.
    @discardableResult
    func fill(projectId: UUID, userId: String, holdings: UserHoldings, ticket: UInt64,
              at filledAt: ContinuousClock.Instant) -> Bool {
        let key = UserKey(projectId: projectId, userId: userId)
        let purchases = Set(holdings.purchases.map { Self.purchaseKey(projectId, $0.purchase) })
        let life = maxAge * (0.5 + 0.5 * min(1, max(0, spread())))
        let refreshAt = filledAt + life * 0.75
        let expiresAt = filledAt + life
        return state.withLock { s -> Bool in
            guard s.enabled else { return false }
            guard s.sequence - ticket <= UInt64(s.recent.count) else { return false }  // too many to check: skip
            for (sequence, invalidation) in s.recent.reversed() {
                guard sequence > ticket else { break }
                switch invalidation {
                case .all: return false
                case .project(let id): if id == projectId { return false }
                case .user(let other): if other == key { return false }
                case .purchase(let purchase): if purchases.contains(purchase) { return false }
                }
            }
            s.remove(key)
            if let evicted = s.entries.set(key, Entry(holdings: holdings, refreshAt: refreshAt, expiresAt: expiresAt)) {
                s.unindex(evicted.0, evicted.1)
            }
            for purchase in purchases { s.holders[purchase, default: []].insert(key) }
            return true
        }
    }

    /// Drops what `messages` make stale.
    public func invalidate(_ messages: [CacheMessage]) {
        state.withLock { s in
            for message in messages {
                switch message {
                case .project(let id), .allUsers(let id):
                    s.record(.project(id))
                    for key in s.entries.keys where key.projectId == id { s.remove(key) }
                case .user(let id, let userId):
                    let key = UserKey(projectId: id, userId: userId)
                    s.record(.user(key))
                    s.remove(key)
                case .purchase(let id, let environment, let original):
                    let purchase = PurchaseKey(projectId: id, environment: environment, originalTransactionId: original)
                    s.record(.purchase(purchase))
                    for key in s.holders[purchase] ?? [] { s.remove(key) }
                }
            }
        }
    }

    static func purchaseKey(_ projectId: UUID, _ purchase: PurchaseState) -> PurchaseKey {
        PurchaseKey(projectId: projectId, environment: purchase.environment.rawValue,
                    originalTransactionId: purchase.originalTransactionId)
    }

    func now() -> ContinuousClock.Instant { clock() }
}

extension PurchaseReadCache.State {
    mutating func record(_ invalidation: PurchaseReadCache.Invalidation) {
        sequence += 1
        if recent.count == PurchaseReadCache.recentCapacity { recent.removeFirst(recent.count / 2) }
        recent.append((sequence, invalidation))
    }

    /// Queues `refresh` unless its user's is already pending or the queue is full (counted as dropped); true when a
    /// worker should start (fewer than `workers` run).
    mutating func queueRefresh(_ refresh: PurchaseReadCache.Refresh, capacity: Int, workers: Int) -> Bool {
        guard refreshes.query != nil, !refreshes.pending.contains(refresh.key) else { return false }
        guard refreshes.queue.count < capacity, workers > 0 else {
            refreshes.counts.dropped += 1
            return false
        }
        refreshes.queue.append(refresh)
        refreshes.pending.insert(refresh.key)
        guard refreshes.workers < workers else { return false }
        refreshes.workers += 1
        return true
    }

    mutating func remove(_ key: PurchaseReadCache.UserKey) {
        guard let entry = entries.remove(key) else { return }
        unindex(key, entry)
    }

    mutating func unindex(_ key: PurchaseReadCache.UserKey, _ entry: PurchaseReadCache.Entry) {
        for owned in entry.owned {
            let purchase = PurchaseReadCache.purchaseKey(key.projectId, owned.purchase)
            holders[purchase]?.remove(key)
            if holders[purchase]?.isEmpty == true { holders[purchase] = nil }
        }
    }
}

/// A bounded map that evicts the least recently used key: a dictionary into a doubly linked list kept in arrays.
struct LRU<Key: Hashable, Value> {
    private var index: [Key: Int] = [:]
    private var slots: [(key: Key, value: Value)?] = []
    private var previous: [Int] = []
    private var next: [Int] = []
    private var free: [Int] = []
    private var head = -1  // most recently used
    private var tail = -1  // least recently used
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { index.count }
    var keys: [Key] { Array(index.keys) }

    /// The value, marked most recently used.
    mutating func get(_ key: Key) -> Value? {
        guard let i = index[key] else { return nil }
        moveToFront(i)
        return slots[i]?.value
    }

    /// Inserts or replaces; returns the entry evicted to make room, if any.
    mutating func set(_ key: Key, _ value: Value) -> (Key, Value)? {
        if let i = index[key] {
            slots[i] = (key, value)
            moveToFront(i)
            return nil
        }
        var evicted: (Key, Value)?
        if index.count >= capacity, tail >= 0, let last = slots[tail] {
            evicted = (last.key, last.value)
            _ = remove(last.key)
        }
        let i: Int
        if let reused = free.popLast() {
            i = reused
            slots[i] = (key, value)
        } else {
            i = slots.count
            slots.append((key, value))
            previous.append(-1)
            next.append(-1)
        }
        index[key] = i
        link(i)
        return evicted
    }

    /// Removes the key; returns its value.
    mutating func remove(_ key: Key) -> Value? {
        guard let i = index.removeValue(forKey: key) else { return nil }
        let value = slots[i]?.value
        unlink(i)
        slots[i] = nil
        free.append(i)
        return value
    }

    mutating func removeAll() {
        self = LRU(capacity: capacity)
    }

    private mutating func moveToFront(_ i: Int) {
        guard head != i else { return }
        unlink(i)
        link(i)
    }

    private mutating func link(_ i: Int) {
        previous[i] = -1
        next[i] = head
        if head >= 0 { previous[head] = i }
        head = i
        if tail < 0 { tail = i }
    }

    private mutating func unlink(_ i: Int) {
        let p = previous[i], n = next[i]
        if p >= 0 { next[p] = n } else { head = n }
        if n >= 0 { previous[n] = p } else { tail = p }
        previous[i] = -1
        next[i] = -1
    }
}
