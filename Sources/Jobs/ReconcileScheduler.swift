public import Domain
import Foundation
import Storage

/// Reconciliation settings of `bouncer serve` and `bouncer reconcile` (`BOUNCER_RECONCILE_*`).
public struct ReconcileServeSettings: Sendable, Equatable {
    /// `BOUNCER_RECONCILE_INTERVAL_SECONDS`: seconds between scheduled runs of a project; 0 = no scheduler.
    public var interval = 86_400
    /// The per-run limits (`BOUNCER_RECONCILE_MAX_CALLS`, `BOUNCER_RECONCILE_CALLS_PER_SECOND`).
    public var run = ReconcileSettings()

    /// The defaults.
    public init() {}
}

/// The scheduler `bouncer serve` starts: one thread that, every `min(interval, 60)` seconds, asks each project with
/// credentials whether its last scheduled run is at least `interval` old and runs it if so. The check and the run
/// happen under the project's PostgreSQL advisory lock, so with any number of instances each project runs once
/// per interval and never twice at the same time.
public final class ReconcileScheduler: Service {
    private let job: Job

    /// A scheduler of `reconciliation` every `interval` seconds per project; `start` starts its thread.
    public init(reconciliation: Reconciliation, interval: Int, log: @escaping @Sendable (String) -> Void) {
        let seconds = TimeInterval(interval)
        job = Job(name: "bouncer.reconcile", interval: .seconds(min(seconds, 60))) { job in
            do {
                _ = try reconciliation.runScheduled(
                    interval: seconds, log: { line in log(jsonLine("reconcile", line)) },
                    isCancelled: { job.isStopping })
            } catch {
                log(jsonLine("reconcile", "scheduled reconciliation failed: \(error)"))
            }
            return .wait
        }
    }

    /// `reconcile-scheduler`.
    public var name: String { "reconcile-scheduler" }

    /// Starts the thread (`bouncer.reconcile`); the first check happens at once.
    public func start() { job.start() }

    /// Whether the thread runs.
    public var isRunning: Bool { job.isRunning }

    /// Stops: a run in progress ends before its next call to Apple (recorded `partial`); waits at most `grace`
    /// (a run still going then keeps its row `running`, and its lock dies with the connection).
    public func stop(grace: Duration) { job.stop(grace: grace) }
}
