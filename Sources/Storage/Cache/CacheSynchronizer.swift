import Primitives
import Dispatch
import Domain
public import Foundation
public import Postgres
import Synchronization

/// Keeps this instance's caches (`CachedProjectStore`, `PurchaseReadCache`) true across instances over the
/// `CacheMessage.channel` of PostgreSQL `LISTEN/NOTIFY`.
///
/// - Receiving: `listenerHandlers` feed a `NotificationListener`. While it is disconnected both caches are off
///   (every read goes to the database); after it reconnects, everything is reloaded before they come back on.
/// - Announcing: `announce` applies messages here at once and queues them; `run()`'s thread sends the queue in
///   batched `pg_notify` calls (one statement, one transaction), off the request path, so receipt transactions
///   never take the commit-time lock that `NOTIFY` needs. Sends are at least `announceSpacing` apart: under load
///   each carries every change since the last, so the write path pays one `NOTIFY` transaction, and every listening
///   session (PostgreSQL wakes each one for each) one wake-up, per spacing instead of per two or three receipts.
///   A writer that dies between its commit and the send leaves other instances' read entries stale for at most the
///   read cache's maximum age.
/// - Safety net: every project is reloaded each `refreshInterval`.
public final class CacheSynchronizer: Sendable {
    struct Link {
        var listening = false
        /// Bumped on every disconnect, so a refresh begun before one cannot turn the caches back on.
        var epoch = 0
        /// The read cache waits for the first refresh after a (re)connect.
        var resetPending = false
    }
    struct Outbox {
        var messages: [CacheMessage] = []
        var queued: Set<CacheMessage> = []
    }

    /// This process's id in the payloads it sends (it skips their echo).
    public let origin: UUID
    /// The first line of every payload this process sends (`CacheMessage.payloads`).
    private let ownHead: String
    private let pool: ConnectionPool
    private let projects: CachedProjectStore
    private let reads: PurchaseReadCache?
    private let refreshInterval: Duration
    private let announceSpacing: Duration
    private let log: @Sendable (String) -> Void
    private let link = Mutex(Link())
    private let outbox = Mutex(Outbox())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let sent = Atomic<Int>(0)

    /// A synchronizer sending through `pool`; `log` gets one line per state change or failure.
    public init(
        pool: ConnectionPool, projects: CachedProjectStore, reads: PurchaseReadCache?,
        refreshInterval: Duration = .seconds(60), announceSpacing: Duration = .milliseconds(5),
        log: @escaping @Sendable (String) -> Void
    ) {
        self.pool = pool
        self.projects = projects
        self.reads = reads
        self.refreshInterval = refreshInterval
        self.announceSpacing = announceSpacing
        self.log = log
        self.origin = UUID()
        self.ownHead = CacheMessage.head(origin: origin)
    }

    /// `NOTIFY` payloads sent since start.
    public var payloadsSent: Int { sent.load(ordering: .relaxed) }

    /// Applies `messages` to this instance's caches now and queues them for the others.
    public func announce(_ messages: [CacheMessage]) {
        reads?.invalidate(messages)
        let wasEmpty = outbox.withLock { box -> Bool in
            let wasEmpty = box.messages.isEmpty
            for message in messages where box.queued.insert(message).inserted { box.messages.append(message) }
            return wasEmpty
        }
        if wasEmpty { wake.signal() }
    }

    /// The handlers for this instance's `NotificationListener` on `CacheMessage.channel`.
    public var listenerHandlers: NotificationListener.Handlers {
        NotificationListener.Handlers(
            connected: { [self] in
                link.withLock { l in
                    l.listening = true
                    l.resetPending = true
                }
                wake.signal()
            },
            disconnected: { [self] error in
                let was = link.withLock { l -> Bool in
                    let was = l.listening
                    l.listening = false
                    l.epoch += 1
                    projects.goOffline()
                    reads?.setEnabled(false)
                    return was
                }
                if was { log("cache: invalidation channel lost (\(error.message)); reading from the database") }
            },
            notification: { [self] _, payload in receive(payload) })
    }

    /// Applies a payload another instance (or an admin transaction) sent.
    func receive(_ payload: String) {
        // Our own echo, the common case (every write announces): skip it before parsing the rest.
        let head = payload.utf8.prefix(ownHead.utf8.count + 1)
        if head.starts(with: ownHead.utf8), head.count == ownHead.utf8.count || head.last == UInt8(ascii: "\n") { return }
        let (sender, messages) = CacheMessage.parse(payload: payload)
        guard sender != origin else { return }
        var users: [CacheMessage] = []
        for message in messages {
            if case .project(let id) = message { projects.invalidate(id) } else { users.append(message) }
        }
        if !users.isEmpty { reads?.invalidate(users) }
    }

    /// Sends announcements and refreshes until `shutdown()`. Blocks the calling thread: give it its own.
    public func run() {
        defer { finished.signal() }
        var nextRefresh = ContinuousClock.now + refreshInterval
        var lastRefreshFailed = false
        var lastSent = ContinuousClock.now - announceSpacing
        while true {
            let (listening, resetPending) = link.withLock { ($0.listening, $0.resetPending) }
            let wait: Duration = !listening ? .seconds(1)
                : (resetPending && !lastRefreshFailed ? .zero : ContinuousClock.now.duration(to: nextRefresh))
            if wait > .zero { _ = wake.wait(timeout: .now() + .nanoseconds(Int(clamping: wait.nanoseconds))) }
            send(after: &lastSent)
            if stopped.load(ordering: .acquiring) { return }
            let due = ContinuousClock.now >= nextRefresh
            if link.withLock({ $0.listening && (($0.resetPending && !lastRefreshFailed) || due) }) {
                lastRefreshFailed = !refresh()
                nextRefresh = ContinuousClock.now + (lastRefreshFailed ? .seconds(1) : refreshInterval)
            }
        }
    }

    /// Sends what is queued, then makes `run()` return (waiting at most 2 s for it).
    public func shutdown() {
        stopped.store(true, ordering: .releasing)
        wake.signal()
        _ = finished.wait(timeout: .now() + 2)
    }

    /// Sends what is queued, `announceSpacing` after the previous send at the earliest (not when stopping).
    private func send(after previous: inout ContinuousClock.Instant) {
        guard outbox.withLock({ !$0.messages.isEmpty }) else { return }
        let rest = ContinuousClock.now.duration(to: previous + announceSpacing)
        if rest > .zero, !stopped.load(ordering: .acquiring) {
            Thread.sleep(forTimeInterval: Double(rest.nonNegativeNanoseconds) / 1e9)
        }
        previous = ContinuousClock.now
        let messages = outbox.withLock { box -> [CacheMessage] in
            defer { box = Outbox() }
            return box.messages
        }
        guard !messages.isEmpty else { return }
        do {
            sent.add(try CacheMessage.send(messages, origin: origin, pool: pool), ordering: .relaxed)
        } catch {
            log("cache: could not announce \(messages.count) changes (\(error)); other instances catch up within "
                + "the read cache's maximum age")
        }
    }

    /// Reloads every project; turns the caches on when the channel listens. False when the reload failed.
    private func refresh() -> Bool {
        let epoch = link.withLock { $0.epoch }
        do {
            try projects.refreshAll()
        } catch {
            log("cache: refresh failed (\(error)); retrying in 1 s")
            return false
        }
        let cameBack = link.withLock { l -> Bool in
            guard l.listening, l.epoch == epoch else { return false }
            projects.goLive()
            guard l.resetPending else { return false }
            reads?.setEnabled(true)
            l.resetPending = false
            return true
        }
        if cameBack { log("cache: listening; projects and reads served from memory") }
        return true
    }
}
