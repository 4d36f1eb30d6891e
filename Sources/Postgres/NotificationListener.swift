import CPostgres
import Foundation
import Glibc
import Synchronization

/// Receives PostgreSQL `NOTIFY` messages on a dedicated session (a pooled one cannot `LISTEN`: it is lent out
/// and may be discarded), on the thread that calls `run()`.
///
/// The thread waits with `poll` on the session's socket and on a wake pipe (so `shutdown()` never waits for a
/// timeout), reads with `PQconsumeInput`/`PQnotifies`, and reconnects with exponential backoff when the session
/// is lost. Messages sent while no session listens are lost: `connected` runs after every successful `LISTEN`,
/// the first and each reconnect, so the owner can refresh whatever the lost messages would have told it.
public final class NotificationListener: Sendable {
    /// What the listener reports, all called on the `run()` thread, one at a time.
    public struct Handlers: Sendable {
        /// `LISTEN` took effect on a new session.
        public var connected: @Sendable () -> Void
        /// The session was lost or could not be opened; a reconnect follows after the backoff.
        public var disconnected: @Sendable (PGError) -> Void
        /// One `NOTIFY` (channel, payload).
        public var notification: @Sendable (_ channel: String, _ payload: String) -> Void

        /// Creates the handlers.
        public init(
            connected: @escaping @Sendable () -> Void, disconnected: @escaping @Sendable (PGError) -> Void,
            notification: @escaping @Sendable (_ channel: String, _ payload: String) -> Void
        ) {
            self.connected = connected
            self.disconnected = disconnected
            self.notification = notification
        }
    }

    private let settings: ConnectionSettings
    private let channels: [String]
    private let handlers: Handlers
    private let backoff: ClosedRange<Duration>
    private let idlePing: Duration
    private let stopped = Atomic<Bool>(false)
    /// The wake pipe: `shutdown()` writes one byte to `[1]`; `run()` polls `[0]`.
    private let wake: (read: Int32, write: Int32)

    /// A listener on `channels` (plain identifiers, quoted when sent). `settings.applicationName` names the
    /// session in `pg_stat_activity`. TCP keepalives (5 s idle) and a `SELECT 1` after `idlePing` without traffic
    /// notice a silently dead server.
    public init(
        settings: ConnectionSettings, channels: [String], handlers: Handlers,
        backoff: ClosedRange<Duration> = .milliseconds(50)...(.seconds(5)), idlePing: Duration = .seconds(10)
    ) {
        var settings = settings
        settings.statementTimeout = .seconds(10)
        if settings.connectTimeoutSeconds == nil { settings.connectTimeoutSeconds = 5 }
        settings.parameters += [("keepalives", "1"), ("keepalives_idle", "5"), ("keepalives_interval", "2"),
                                ("keepalives_count", "3")]
        self.settings = settings
        self.channels = channels
        self.handlers = handlers
        self.backoff = backoff
        self.idlePing = idlePing
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, O_NONBLOCK)
            }
        } else {
            fds = [-1, -1]  // without a pipe, shutdown is noticed at the next idle ping or reconnect
        }
        wake = (fds[0], fds[1])
    }

    deinit {
        if wake.read >= 0 { close(wake.read) }
        if wake.write >= 0 { close(wake.write) }
    }

    /// Listens until `shutdown()`, reconnecting as needed. Blocks the calling thread: give it its own.
    public func run() {
        var delay = backoff.lowerBound
        while !stopped.load(ordering: .acquiring) {
            do {
                let connection = try Connection(settings: settings)
                for channel in channels {
                    try connection.executeScript(unsafeSQL: "LISTEN \"\(channel.replacingOccurrences(of: "\"", with: "\"\""))\"")
                }
                delay = backoff.lowerBound
                handlers.connected()
                try listen(on: connection)
                return  // listen returns only on shutdown
            } catch {
                if stopped.load(ordering: .acquiring) { return }
                handlers.disconnected(error)
            }
            _ = waitForWake(timeout: delay)
            delay = min(delay * 2, backoff.upperBound)
        }
    }

    /// Makes `run()` return soon (from any thread); the session closes with it.
    public func shutdown() {
        stopped.store(true, ordering: .releasing)
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    /// Delivers notifications until shutdown (returns) or until the session fails (throws).
    private func listen(on connection: Connection) throws(PGError) {
        let conn = connection.handle.pointer
        let socket = PQsocket(conn)
        guard socket >= 0 else { throw PGError(code: .connectionLost, message: "listener session has no socket") }
        let pingMilliseconds = Int32(clamping: idlePing.components.seconds * 1000
            + idlePing.components.attoseconds / 1_000_000_000_000_000)
        while true {
            while let notice = PQnotifies(conn) {
                // PQnotifies hands over one malloc'd block (struct and strings): PQfreemem frees it.
                let channel = String(cString: notice.pointee.relname)
                let payload = String(cString: notice.pointee.extra)
                PQfreemem(notice)
                handlers.notification(channel, payload)
            }
            if stopped.load(ordering: .acquiring) { return }
            var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, pingMilliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw PGError(code: .connectionLost, message: "poll failed: errno \(errno)")
            }
            if fds[1].revents != 0 || stopped.load(ordering: .acquiring) { return }
            if ready == 0 {
                // Quiet for idlePing: a round trip proves the session (and its LISTEN) is still there.
                try connection.executeScript(unsafeSQL: "SELECT 1")
                continue
            }
            guard PQconsumeInput(conn) == 1, PQstatus(conn) == CONNECTION_OK else {
                throw PGError(code: .connectionLost,
                              message: String(cString: PQerrorMessage(conn)).trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
    }

    /// Sleeps up to `timeout`, or less when `shutdown()` writes to the wake pipe. True when woken.
    private func waitForWake(timeout: Duration) -> Bool {
        var fds = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
        let ms = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return poll(&fds, 1, ms) > 0
    }
}
