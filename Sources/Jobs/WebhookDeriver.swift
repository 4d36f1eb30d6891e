import Dispatch
import Foundation
import Storage

/// Derives webhook events and the dashboard's rollup (`overview_days`, schema/0035) from the fact log
/// (`purchase_changes`, schema/0025) after the receipts' transactions commit: one thread per instance, woken by this
/// instance's writes (`wake`) and every `pollInterval` for the others'. Passes start at most every `coalesceInterval`,
/// so under load one pass takes what hundreds of wakes would have taken a few rows at a time (the per-call cost — the
/// poll, the lock, the rollup upserts — was most of PostgreSQL's deriving). Each project's batch is one transaction
/// (`PostgresWebhookStore.deriveChanges`), so a kill -9 leaves each event and rollup change derived exactly once;
/// instances share projects through the project's deriver lock. Runs whether or not this instance delivers
/// (`BOUNCER_WEBHOOK_CONCURRENCY=0`): events still queue for the others.
public final class WebhookDeriver: Service {
    private let job: Job

    /// How often another instance's writes are looked for.
    public static let pollInterval: Duration = .milliseconds(250)
    /// The shortest time between the starts of two passes: the most a webhook or rollup waits for the coalescing
    /// (the overview reads pending log rows too, so it never sees the lag).
    public static let coalesceInterval: Duration = .milliseconds(50)
    /// Log rows per transaction (with the rest of the recording transactions they start: each is replayed whole).
    public static let batch = 500

    /// A deriver over `database`; `start` starts its thread.
    public init(database: Database, log: @escaping @Sendable (String) -> Void) {
        let store = PostgresWebhookStore(pool: database.pool)
        job = Job(name: "bouncer.webhooks.derive", interval: Self.pollInterval, minimumGap: Self.coalesceInterval) { job in
            Self.pass(job, store: store, log: log)
            return .wait
        }
    }

    /// `webhook-deriver`.
    public var name: String { "webhook-deriver" }

    /// Asks for a pass soon: a write committed. Requests while one is pending coalesce into it.
    public func wake() { job.wake() }

    /// Starts the thread (`bouncer.webhooks.derive`); its first pass runs at once.
    public func start() { job.start() }

    /// Stops after the batch in progress (at most `grace`): an unfinished batch rolls back and is derived again.
    public func stop(grace: Duration) { job.stop(grace: grace) }

    /// Whether the thread runs.
    public var isRunning: Bool { job.isRunning }

    /// Derives the rows there are, again at once only while a project filled its batch (a backlog): rows that
    /// arrive meanwhile have woken the thread, and wait for the next pass.
    private static func pass(_ job: Job, store: PostgresWebhookStore, log: @Sendable (String) -> Void) {
        do {
            var backlog = true
            while backlog, !job.isStopping {
                backlog = false
                let projects = try store.projectsWithChanges(limit: 100)
                for project in projects where try store.deriveChanges(projectId: project, limit: Self.batch) >= Self.batch {
                    backlog = true
                }
                if projects.count == 100 { backlog = true }
            }
        } catch {
            log(jsonLine("webhooks", "derive: \(String(reflecting: error))"))
            job.pause(.seconds(1))
        }
    }
}
