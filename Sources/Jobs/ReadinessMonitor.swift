public import Postgres

/// Pings the database once a second on its own thread, so `/readyz` answers from memory and never blocks
/// the I/O loop on a dead database.
public final class ReadinessMonitor: Service {
    private let ready: Job.Flag
    private let job: Job

    /// Pings `pool` once now (so `isReady` is true from the start when the database answers); `start` starts the
    /// thread that pings every `interval`.
    public init(pool: ConnectionPool, interval: Duration = .seconds(1)) {
        let ready = Job.Flag(pool.ping())
        self.ready = ready
        job = Job(name: "bouncer-readiness", interval: interval) { job in
            job.pause(interval)
            if !job.isStopping { ready.set(pool.ping()) }
            return .again
        }
    }

    /// `readiness-monitor`.
    public var name: String { "readiness-monitor" }

    /// The last ping's answer.
    public var isReady: Bool { ready.value }

    /// Starts the thread.
    public func start() { job.start() }

    /// Ends the thread after the ping in progress.
    public func stop(grace: Duration) { job.stop(grace: grace) }

    /// Whether the thread runs.
    public var isRunning: Bool { job.isRunning }
}
