public import Domain
import Foundation

/// Flushes the `UsageMeter`'s in-memory counts every `interval` (one statement for every account-month), and once
/// more when it stops, so a clean shutdown loses nothing and a crash at most one interval's counts. Each flush also
/// reloads the accounts' quotas and stored receipts, which is how one process learns of the others' counts.
public final class UsageFlusher: Service {
    private let job: Job
    private let flushNow: @Sendable () -> Void

    /// A flusher of `meter`; `log` receives a JSON line when a flush fails (the counts are kept for the next).
    public init(meter: UsageMeter, interval: Duration = .seconds(10), log: @escaping @Sendable (String) -> Void) {
        @Sendable func flush() {
            do {
                try meter.flush(now: Date())
            } catch {
                log(jsonLine("usage", "flush failed, counts kept for the next: \(error)"))
            }
        }
        flushNow = flush
        job = Job(name: "bouncer-usage", interval: interval) { job in
            flush()
            job.pause(interval)
            if job.isStopping { flush() }
            return .again
        }
    }

    /// `usage-flusher`.
    public var name: String { "usage-flusher" }

    /// Starts the thread: a first flush loads the quotas.
    public func start() {
        flushNow()
        job.start()
    }

    /// Ends the thread after a last flush.
    public func stop(grace: Duration) { job.stop(grace: grace) }

    /// Whether the thread runs.
    public var isRunning: Bool { job.isRunning }
}
