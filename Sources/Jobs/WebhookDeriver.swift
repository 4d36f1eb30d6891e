import Dispatch
import Foundation
import Storage
import Synchronization

/// Derives webhook events and the dashboard's rollup (`overview_days`, schema/0035) from the fact log
/// (`purchase_changes`, schema/0025) after the receipts' transactions commit: one thread per instance, woken by this
/// instance's writes (`wake`) and every `pollInterval` for the others'. Passes start at most every `coalesceInterval`,
/// so under load one pass takes what hundreds of wakes would have taken a few rows at a time (the per-call cost — the
/// poll, the lock, the rollup upserts — was most of PostgreSQL's deriving). Each project's batch is one transaction
/// (`PostgresWebhookStore.deriveChanges`), so a kill -9 leaves each event and rollup change derived exactly once;
/// instances share projects through the project's deriver lock. Runs whether or not this instance delivers
/// (`BOUNCER_WEBHOOK_CONCURRENCY=0`): events still queue for the others.
///
/// It yields to the receipt path: after a batch during which this instance's receipts kept committing (wakes
/// arrived), the thread rests `yieldFactor` times the batch's duration (at most `maxRest`) before the next, so in a
/// burst derivation takes at most 1 / (1 + `yieldFactor`) of one connection's time and the log grows instead; the
/// batches grow with it (cheaper per row). At rest (no wakes during a batch) it does not rest. `lag` (exported as
/// `bouncer_webhook_derive_lag_seconds`) is the age of the oldest of this instance's commits not yet derived.
public final class WebhookDeriver: Service {
    private let job: Job
    private let progress: Progress

    /// Wakes and the commits they announce, between `wake` and the pass that derives them.
    final class Progress: Sendable {
        struct State {
            /// Wakes so far (a batch during which it moved ran beside receipts).
            var wakes = 0
            /// The first wake not yet taken by a pass.
            var waiting: DispatchTime?
            /// The first wake taken by the pass in progress (derived when the pass ends).
            var deriving: DispatchTime?
        }

        let state = Mutex(State())
    }

    /// How often another instance's writes are looked for.
    public static let pollInterval: Duration = .milliseconds(250)
    /// The shortest time between the starts of two passes: the most a webhook or rollup waits for the coalescing
    /// (the overview reads pending log rows too, so it never sees the lag).
    public static let coalesceInterval: Duration = .milliseconds(50)
    /// Log rows per transaction (with the rest of the recording transactions they start: each is replayed whole).
    public static let batch = 500
    /// How many times a busy batch's duration the thread rests before the next (see the type's comment).
    public static let yieldFactor = 3.0
    /// The longest rest: bounds what yielding adds to an event's lag (a rest per batch of `batch` rows).
    public static let maxRest: Duration = .seconds(1)

    /// A deriver over `database`; `start` starts its thread.
    public init(database: Database, log: @escaping @Sendable (String) -> Void) {
        let store = PostgresWebhookStore(pool: database.pool)
        let progress = Progress()
        self.progress = progress
        job = Job(name: "bouncer.webhooks.derive", interval: Self.pollInterval, minimumGap: Self.coalesceInterval) { job in
            progress.state.withLock { p in
                p.deriving = p.waiting
                p.waiting = nil
            }
            let derived = Self.pass(job, store: store, progress: progress, log: log)
            progress.state.withLock { p in
                // A failed pass leaves its rows: their commits still wait (the oldest first).
                if !derived, let deriving = p.deriving, p.waiting.map({ deriving < $0 }) ?? true {
                    p.waiting = deriving
                }
                p.deriving = nil
            }
            return .wait
        }
    }

    /// `webhook-deriver`.
    public var name: String { "webhook-deriver" }

    /// Asks for a pass soon: a write committed. Requests while one is pending coalesce into it.
    public func wake() {
        progress.state.withLock { p in
            p.wakes &+= 1
            if p.waiting == nil { p.waiting = .now() }
        }
        job.wake()
    }

    /// How many commits of this instance have been announced (`wake`) so far: the dispatcher yields to receipts by it.
    public var commits: Int { progress.state.withLock { $0.wakes } }

    /// Seconds since the oldest of this instance's commits not yet derived (0 when caught up); other instances'
    /// commits are not counted (their own deriver's gauge covers them).
    public var lag: Double {
        let oldest = progress.state.withLock { p in p.deriving ?? p.waiting }
        guard let oldest else { return 0 }
        let now = DispatchTime.now().uptimeNanoseconds
        return now > oldest.uptimeNanoseconds ? Double(now - oldest.uptimeNanoseconds) / 1e9 : 0
    }

    /// Starts the thread (`bouncer.webhooks.derive`); its first pass runs at once.
    public func start() { job.start() }

    /// Stops after the batch in progress (at most `grace`): an unfinished batch rolls back and is derived again.
    public func stop(grace: Duration) { job.stop(grace: grace) }

    /// Whether the thread runs.
    public var isRunning: Bool { job.isRunning }

    /// Derives the rows there are, again at once only while a project filled its batch (a backlog): rows that
    /// arrive meanwhile have woken the thread, and wait for the next pass. Whether it ended without an error.
    private static func pass(_ job: Job, store: PostgresWebhookStore, progress: Progress,
                             log: @Sendable (String) -> Void) -> Bool {
        do {
            var backlog = true
            while backlog, !job.isStopping {
                backlog = false
                let projects = try store.projectsWithChanges(limit: 100)
                for project in projects {
                    let started = DispatchTime.now()
                    let wakes = progress.state.withLock { $0.wakes }
                    if try store.deriveChanges(projectId: project, limit: Self.batch) >= Self.batch { backlog = true }
                    if progress.state.withLock({ $0.wakes }) != wakes {
                        job.rest(Self.rest(after: DispatchTime.now().uptimeNanoseconds &- started.uptimeNanoseconds))
                    }
                }
                if projects.count == 100 { backlog = true }
            }
        } catch {
            log(jsonLine("webhooks", "derive: \(String(reflecting: error))"))
            job.pause(.seconds(1))
            return false
        }
        return true
    }

    /// The rest after a batch of `nanoseconds` that ran beside receipts: `yieldFactor` times it, at most `maxRest`.
    static func rest(after nanoseconds: UInt64) -> Duration {
        let seconds = min(Double(nanoseconds) / 1e9 * yieldFactor, Job.seconds(maxRest))
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}
