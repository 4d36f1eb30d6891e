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
final class WebhookDeriver: Sendable {
    private let store: PostgresWebhookStore
    private let log: @Sendable (String) -> Void
    private let signal = DispatchSemaphore(value: 0)
    private let requested = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    /// How often another instance's writes are looked for.
    static let pollInterval = 0.25
    /// The shortest time between the starts of two passes: the most a webhook or rollup waits for the coalescing
    /// (the overview reads pending log rows too, so it never sees the lag).
    static let coalesceInterval = 0.05
    /// Log rows per transaction (with the rest of the recording transactions they start: each is replayed whole).
    static let batch = 500

    init(database: Database, log: @escaping @Sendable (String) -> Void) {
        self.store = PostgresWebhookStore(pool: database.pool)
        self.log = log
    }

    /// Asks for a pass soon: a write committed. Requests while one is pending coalesce into it.
    func wake() {
        if !requested.exchange(true, ordering: .acquiringAndReleasing) { signal.signal() }
    }

    /// Starts the thread.
    func start() {
        let thread = Thread { [self] in
            var last = DispatchTime.now()
            while !stopping.load(ordering: .acquiring) {
                _ = signal.wait(timeout: .now() + Self.pollInterval)
                let due = last + Self.coalesceInterval
                if DispatchTime.now() < due {
                    // Woken sooner than that: let the writes gather (a shutdown's signal ends the wait).
                    _ = signal.wait(timeout: due)
                    if stopping.load(ordering: .acquiring) { break }
                }
                requested.store(false, ordering: .releasing)
                last = DispatchTime.now()
                pass()
            }
            done.signal()
        }
        thread.name = "bouncer.webhooks.derive"
        thread.start()
    }

    /// Stops after the batch in progress (at most `grace`): an unfinished batch rolls back and is derived again.
    func shutdown(grace: Duration) {
        stopping.store(true, ordering: .releasing)
        signal.signal()
        _ = done.wait(timeout: .now() + Double(grace.components.seconds))
    }

    /// Derives the rows there are, again at once only while a project filled its batch (a backlog): rows that
    /// arrive meanwhile have woken the thread, and wait for the next pass.
    private func pass() {
        do {
            var backlog = true
            while backlog, !stopping.load(ordering: .acquiring) {
                backlog = false
                let projects = try store.projectsWithChanges(limit: 100)
                for project in projects where try store.deriveChanges(projectId: project, limit: Self.batch) >= Self.batch {
                    backlog = true
                }
                if projects.count == 100 { backlog = true }
            }
        } catch {
            log(jsonLine("webhooks", "derive: \(String(reflecting: error))"))
            _ = signal.wait(timeout: .now() + 1)
        }
    }
}
