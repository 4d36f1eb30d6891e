import Primitives
import Dispatch
import Foundation
import Synchronization

/// A bounded pool of `Connection`s with FIFO waiting, an acquire deadline, a health check on
/// checkout, and self-healing: broken connections are dropped and replaced lazily, so the pool
/// recovers after a PostgreSQL restart without restarting the process.
///
/// All calls block the calling thread (our own worker threads).
public final class ConnectionPool: Sendable {
    /// Pool limits and session settings.
    public struct Configuration: Sendable {
        /// Maximum number of open connections.
        public var size: Int = 10
        /// How long `withConnection` waits for a free connection before `.poolTimeout`.
        public var acquireTimeout: Duration = .seconds(5)
        /// Server-side `statement_timeout` for every session (nil: the server's setting).
        public var statementTimeout: Duration? = .seconds(30)
        /// libpq `connect_timeout` (whole seconds, at least 2).
        public var connectTimeout: Duration = .seconds(5)
        /// How many times `transaction` reruns after 40001/40P01 before giving up.
        public var maxTransactionRetries: Int = 5

        /// The defaults: 10 connections, 5 s acquire, 30 s statements, 5 s connect, 5 retries.
        public init() {}

        /// Custom limits.
        public init(size: Int, acquireTimeout: Duration = .seconds(5), statementTimeout: Duration? = .seconds(30),
                    connectTimeout: Duration = .seconds(5), maxTransactionRetries: Int = 5) {
            self.size = size
            self.acquireTimeout = acquireTimeout
            self.statementTimeout = statementTimeout
            self.connectTimeout = connectTimeout
            self.maxTransactionRetries = maxTransactionRetries
        }
    }

    /// A snapshot of the pool's counters.
    public struct Statistics: Sendable, Equatable {
        /// Connections lent out right now.
        public var inUse: Int
        /// Open connections waiting in the pool.
        public var idle: Int
        /// Threads waiting for a connection right now.
        public var waiting: Int
        /// Checkouts that had to wait, since start.
        public var waits: Int
        /// Checkouts that gave up with `.poolTimeout`, since start.
        public var timeouts: Int
        /// Connections discarded as broken, since start.
        public var discarded: Int
        /// Connections opened, since start.
        public var opened: Int
    }

    /// What a waiter receives: a connection, or permission to open one, or the pool closed.
    private enum Grant {
        case connection(Connection)
        case permit
        case closed
    }

    /// A blocked checkout. `grant` is written and read only under the pool's mutex.
    private final class Waiter: @unchecked Sendable {
        let semaphore = DispatchSemaphore(value: 0)
        var grant: Grant?
    }

    private struct State: ~Copyable {
        var idle: [Connection] = []
        /// Open connections plus connections being opened (each holds one of `size` slots).
        var slots = 0
        var waiters: [Waiter] = []
        var isShutdown = false
        var waits = 0
        var timeouts = 0
        var discarded = 0
        var opened = 0
    }

    /// The connection settings used for new connections (with the configuration's timeouts applied).
    public let settings: ConnectionSettings
    /// The limits this pool was created with.
    public let configuration: Configuration
    private let state = Mutex(State())

    /// Creates a pool; connections open lazily on first use.
    public init(settings: ConnectionSettings, configuration: Configuration = Configuration()) {
        var settings = settings
        if settings.statementTimeout == nil { settings.statementTimeout = configuration.statementTimeout }
        if settings.connectTimeoutSeconds == nil {
            settings.connectTimeoutSeconds = Int(configuration.connectTimeout.components.seconds)
        }
        self.settings = settings
        var configuration = configuration
        configuration.size = max(1, configuration.size)
        self.configuration = configuration
    }

    /// Lends a connection to `body` and takes it back afterwards; a connection left broken or inside
    /// a transaction that cannot be rolled back is discarded instead of reused.
    @discardableResult
    public func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        let connection = try acquire()
        defer { release(connection) }
        return try body(connection)
    }

    /// Runs `body` in a transaction on a pooled connection: COMMIT on return, ROLLBACK on throw.
    /// Serialization failures, deadlocks (40001/40P01) and a statement a migration made stale (`PGError.isRetryable`)
    /// rerun `body` from the start, at most
    /// `maxTransactionRetries` times, so `body` must be safe to repeat (no side effects outside the database).
    @discardableResult
    public func transaction<T>(isolation: IsolationLevel = .readCommitted, _ body: (Connection) throws -> T) throws -> T {
        var attempt = 0
        while true {
            var bodyStarted = false
            do {
                return try withConnection { connection in
                    try connection.transaction(isolation: isolation) { connection in
                        bodyStarted = true
                        return try body(connection)
                    }
                }
            } catch let error as PGError where error.isRetryable && attempt < configuration.maxTransactionRetries {
                attempt += 1
                // Short jittered backoff so the conflicting transactions do not collide again in lockstep.
                usleep(UInt32.random(in: 0...(UInt32(min(attempt, 6)) * 2_000)))
            } catch let error as PGError where error.code == .connectionLost && !bodyStarted && attempt == 0 {
                // The connection died before BEGIN completed (nothing ran): one fresh connection may try.
                attempt += 1
            }
        }
    }

    /// Runs `body`, which must run exactly one statement, on a pooled connection outside a transaction block: the
    /// statement is its own transaction, committed before its result is returned (one round trip, no BEGIN/COMMIT).
    /// Serialization failures and deadlocks rerun it as `transaction` does, and so does a connection that died
    /// on the first attempt; so the statement must be idempotent (running it twice is running it once).
    @discardableResult
    public func autocommit<T>(_ body: (Connection) throws -> T) throws -> T {
        var attempt = 0
        while true {
            do {
                return try withConnection(body)
            } catch let error as PGError where error.isRetryable && attempt < configuration.maxTransactionRetries {
                attempt += 1
                usleep(UInt32.random(in: 0...(UInt32(min(attempt, 6)) * 2_000)))
            } catch let error as PGError where error.code == .connectionLost && attempt == 0 {
                attempt += 1
            }
        }
    }

    /// True when a pooled connection answers `SELECT 1` (for `/readyz`).
    public func ping() -> Bool {
        (try? withConnection { try $0.query("SELECT 1") }) != nil
    }

    /// The pool's counters now.
    public var statistics: Statistics {
        state.withLock { s in
            Statistics(inUse: s.slots - s.idle.count, idle: s.idle.count, waiting: s.waiters.count, waits: s.waits,
                       timeouts: s.timeouts, discarded: s.discarded, opened: s.opened)
        }
    }

    /// Closes idle connections, fails waiting and future checkouts with `.closed`; connections in use
    /// are closed when they come back.
    public func shutdown() {
        let (idle, waiters): ([Connection], [Waiter]) = state.withLock { s in
            s.isShutdown = true
            let idle = s.idle
            let waiters = s.waiters
            s.slots -= idle.count
            s.idle = []
            s.waiters = []
            for waiter in waiters { waiter.grant = .closed }
            return (idle, waiters)
        }
        waiters.forEach { $0.semaphore.signal() }
        _ = idle  // closed (PQfinish) when the last reference goes, outside the lock
    }

    // MARK: - Checkout

    private func acquire() throws(PGError) -> Connection {
        let deadline = DispatchTime.now() + .nanoseconds(Int(configuration.acquireTimeout.nanoseconds))
        var grant = try nextGrant(deadline: deadline)
        while true {
            switch grant {
            case .closed:
                throw PGError(code: .closed, message: "connection pool is shut down")
            case .connection(let connection):
                if connection.checkAlive() { return connection }
                // Dead (e.g. server restarted): reuse its slot for a fresh connection.
                state.withLock { $0.discarded += 1 }
                grant = .permit
            case .permit:
                do {
                    let connection = try Connection(settings: settings)
                    state.withLock { $0.opened += 1 }
                    return connection
                } catch {
                    giveBackSlot()
                    throw error
                }
            }
        }
    }

    private func nextGrant(deadline: DispatchTime) throws(PGError) -> Grant {
        let waiter: Waiter
        let immediate: Grant? = state.withLock { s -> Grant? in
            if s.isShutdown { return .closed }
            if let connection = s.idle.popLast() { return .connection(connection) }
            if s.slots < configuration.size {
                s.slots += 1
                return .permit
            }
            return nil
        }
        if let immediate { return immediate }
        waiter = Waiter()
        let enqueued = state.withLock { s -> Grant? in
            // Re-check: a connection may have come back between the two locks.
            if s.isShutdown { return .closed }
            if let connection = s.idle.popLast() { return .connection(connection) }
            if s.slots < configuration.size {
                s.slots += 1
                return .permit
            }
            s.waits += 1
            s.waiters.append(waiter)
            return nil
        }
        if let enqueued { return enqueued }
        if waiter.semaphore.wait(timeout: deadline) == .success {
            if let grant = state.withLock({ _ in waiter.grant }) { return grant }
        }
        // Timed out; a grant may still have arrived between the timeout and taking the lock.
        let late: Grant? = state.withLock { s in
            if let grant = waiter.grant { return grant }
            s.waiters.removeAll { $0 === waiter }
            s.timeouts += 1
            return nil
        }
        if let late { return late }
        throw PGError(code: .poolTimeout,
                      message: "no database connection free within \(configuration.acquireTimeout) (pool size \(configuration.size))")
    }

    private func release(_ connection: Connection) {
        if !connection.isBroken && connection.isInTransaction {
            connection.rollbackQuietly()
        }
        let healthy = !connection.isBroken && !connection.isInTransaction
        let wake: Waiter? = state.withLock { s in
            if !healthy || s.isShutdown {
                if !healthy { s.discarded += 1 }
                if !s.waiters.isEmpty && !s.isShutdown {
                    let waiter = s.waiters.removeFirst()
                    waiter.grant = .permit  // the slot passes to the waiter, who opens a new connection
                    return waiter
                }
                s.slots -= 1
                return nil
            }
            if !s.waiters.isEmpty {
                let waiter = s.waiters.removeFirst()
                waiter.grant = .connection(connection)
                return waiter
            }
            s.idle.append(connection)
            return nil
        }
        wake?.semaphore.signal()
    }

    /// A slot whose connection could not be opened or was discarded: hand it to a waiter or free it.
    private func giveBackSlot() {
        let wake: Waiter? = state.withLock { s in
            if !s.waiters.isEmpty && !s.isShutdown {
                let waiter = s.waiters.removeFirst()
                waiter.grant = .permit
                return waiter
            }
            s.slots -= 1
            return nil
        }
        wake?.semaphore.signal()
    }
}
