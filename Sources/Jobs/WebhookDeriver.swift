import Dispatch
import Foundation
public import Storage
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
/// It yields to the receipt path: a batch that starts after this instance's receipts committed takes at most
/// `busyBatch` rows (a short use of a core), and after a batch during which receipts kept committing the thread rests
/// a multiple of the batch's duration (`ReceiptLoad`: 3× while the write path has room, 9× while most receipts wait
/// for a batch slot of group commit) before the next, so in a burst derivation takes 1/4 to 1/10 of one
/// connection's time and the log grows instead. At rest (no commits during a batch) it runs at full speed, `batch`
/// rows a transaction. `lag` (exported as `bouncer_webhook_derive_lag_seconds`) is the age of the oldest of this
/// instance's commits not yet derived.
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
            /// `wakes` when the last batch started: receipts committed since when it moved.
            var batchWakes = 0
        }

        let state = Mutex(State())
        /// Group commit's counters (`attach(receiptBatches:)`); nil: every receipt counts as not waiting.
        let receiptBatches = Mutex<(@Sendable () -> PostgresPurchaseStore.BatchCounts)?>(nil)

        /// What this instance's receipts did so far.
        var load: ReceiptLoad {
            var load = ReceiptLoad()
            load.commits = state.withLock { $0.wakes }
            if let counts = receiptBatches.withLock({ $0 })?() {
                load.receipts = counts.receipts
                load.waited = counts.waited
            }
            return load
        }
    }

    /// How often another instance's writes are looked for.
    public static let pollInterval: Duration = .milliseconds(250)
    /// The shortest time between the starts of two passes: the most a webhook or rollup waits for the coalescing
    /// (the overview reads pending log rows too, so it never sees the lag).
    public static let coalesceInterval: Duration = .milliseconds(50)
    /// Log rows per transaction at rest (with the rest of the recording transactions they start: each is replayed
    /// whole).
    public static let batch = 500
    /// Log rows per transaction while receipts commit: a short batch takes a core from the receipts for a short
    /// time (500 rows with a webhook ran ~260 ms of PostgreSQL CPU, a receipt's p99 many times over; the cost per
    /// row hardly depends on the batch's size).
    public static let busyBatch = 100

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

    /// Where the receipts' group-commit counters come from (`Caches.receiptBatches`): the yield tells a saturated
    /// write path by them.
    public func attach(receiptBatches source: @escaping @Sendable () -> PostgresPurchaseStore.BatchCounts) {
        progress.receiptBatches.withLock { $0 = source }
    }

    /// What this instance's receipts did so far: the deriver and the dispatcher yield to them by it.
    public var receiptLoad: ReceiptLoad { progress.load }

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
                    let busy = progress.state.withLock { p in
                        defer { p.batchWakes = p.wakes }
                        return p.wakes != p.batchWakes
                    }
                    let load = progress.load
                    let limit = busy ? Self.busyBatch : Self.batch
                    if try store.deriveChanges(projectId: project, limit: limit) >= limit { backlog = true }
                    let took = Double(DispatchTime.now().uptimeNanoseconds &- started.uptimeNanoseconds) / 1e9
                    let rest = ReceiptLoad.rest(after: took, from: load, to: progress.load)
                    if rest > 0 { job.rest(.nanoseconds(Int64((rest * 1e9).rounded()))) }
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
}
