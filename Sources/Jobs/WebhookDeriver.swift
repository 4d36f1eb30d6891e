import Dispatch
import Foundation
import Storage
import Synchronization

/// Derives webhook events and the dashboard's rollup (`overview_days`, schema/0035) from the fact log
/// (`purchase_changes`, schema/0025) after the receipts' transactions commit: one thread per instance, woken by this
/// instance's writes (`wake`) and every `pollInterval` for the others'. Each project's batch is one transaction
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
            while !stopping.load(ordering: .acquiring) {
                _ = signal.wait(timeout: .now() + Self.pollInterval)
                requested.store(false, ordering: .releasing)
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

    /// Derives until no project has rows left that this instance may take.
    private func pass() {
        do {
            var consumed = 1
            while consumed > 0, !stopping.load(ordering: .acquiring) {
                consumed = 0
                for project in try store.projectsWithChanges(limit: 100) {
                    consumed += try store.deriveChanges(projectId: project, limit: Self.batch)
                }
            }
        } catch {
            log(jsonLine("webhooks", "derive: \(String(reflecting: error))"))
            _ = signal.wait(timeout: .now() + 1)
        }
    }
}
