import Dispatch
import Domain
import Foundation
import Glibc
import Storage
import Synchronization

/// Reconciliation settings of `bouncer serve` and `bouncer reconcile` (`BOUNCER_RECONCILE_*`).
struct ReconcileServeSettings: Sendable, Equatable {
    /// `BOUNCER_RECONCILE_INTERVAL_SECONDS`: seconds between scheduled runs of a project; 0 = no scheduler.
    var interval = 86_400
    /// The per-run limits (`BOUNCER_RECONCILE_MAX_CALLS`, `BOUNCER_RECONCILE_CALLS_PER_SECOND`).
    var run = ReconcileSettings()
}

extension ServeSettings {
    /// The variables of `ReconcileServeSettings`, appended to `ServeSettings.variables`.
    static let reconcileVariables: [Variable] = [
        Variable(name: "BOUNCER_RECONCILE_INTERVAL_SECONDS",
                 help: "seconds between reconciliations of each project with Apple (default 86400, 0 = off)") { s, v in
            guard v.utf8.count <= 9, let n = Int(v), (0...31_536_000).contains(n) else {
                return "must be an integer in 0...31536000 (0 turns scheduled reconciliation off)"
            }
            s.reconcile.interval = n
            return nil
        },
        Variable(name: "BOUNCER_RECONCILE_MAX_CALLS",
                 help: "calls to Apple per project and reconciliation run (default 1000)") { s, v in
            guard v.utf8.count <= 7, let n = Int(v), (1...1_000_000).contains(n) else {
                return "must be an integer in 1...1000000"
            }
            s.reconcile.run.maxCallsPerRun = n
            s.reconcile.run.historyReserve = min(s.reconcile.run.historyReserve, max(1, n / 4))
            return nil
        },
        Variable(name: "BOUNCER_RECONCILE_CALLS_PER_SECOND",
                 help: "calls to Apple per second during a project's reconciliation (default 10)") { s, v in
            guard let x = Double(v), x.isFinite, x > 0, x <= 1_000 else { return "must be a number in (0, 1000]" }
            s.reconcile.run.callsPerSecond = x
            return nil
        },
    ]
}

/// Builds the reconciliation use case over the database (shared by `serve` and `reconcile`).
enum ReconcileWiring {
    /// This process in `reconcile_runs.instance`: host name and pid.
    static var instance: String {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count - 1) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        return "\(host)/\(getpid())"
    }

    /// `caches`: the serving process's (its read cache and the other instances' hear of each change); without,
    /// the changes are announced by `NOTIFY` alone (the CLI).
    static func reconciliation(
        settings: ServeSettings, database: Database, projects: any ProjectStore, appStore: any AppStoreServerAPI,
        verifier: any SignedDataVerifying, credentials: CredentialAdministration, caches: Caches? = nil
    ) -> Reconciliation {
        let store = PostgresReconciliationStore(pool: database.pool)
        let announced = caches?.announcing(store) ?? AnnouncingReconciliationStore(
            inner: store, announce: AnnouncingReconciliationStore.notifying(pool: database.pool))
        return Reconciliation(
            projects: projects, credentials: credentials,
            store: announced, appStore: appStore, verifier: verifier,
            settings: settings.reconcile.run, instance: instance, now: { Date() },
            sleep: { seconds in usleep(UInt32(max(0, min(seconds, 60)) * 1_000_000)) })
    }
}

/// The scheduler `bouncer serve` starts: one thread that, every `min(interval, 60)` seconds, asks each project with
/// credentials whether its last scheduled run is at least `interval` old and runs it if so. The check and the run
/// happen under the project's PostgreSQL advisory lock, so with any number of instances each project runs once
/// per interval and never twice at the same time.
final class ReconcileScheduler: Sendable {
    private let reconciliation: Reconciliation
    private let interval: TimeInterval
    private let log: @Sendable (String) -> Void
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)

    init(reconciliation: Reconciliation, interval: Int, log: @escaping @Sendable (String) -> Void) {
        self.reconciliation = reconciliation
        self.interval = TimeInterval(interval)
        self.log = log
    }

    /// Starts the thread; the first check happens at once.
    func start() {
        let thread = Thread { [self] in loop() }
        thread.name = "bouncer.reconcile"
        thread.start()
    }

    /// Stops: a run in progress ends before its next call to Apple (recorded `partial`); waits at most `grace`
    /// (a run still going then keeps its row `running`, and its lock dies with the connection).
    func shutdown(grace: Duration) {
        stopping.store(true, ordering: .releasing)
        wake.signal()
        let seconds = Double(grace.components.seconds) + Double(grace.components.attoseconds) / 1e18
        _ = done.wait(timeout: .now() + seconds)
    }

    private func loop() {
        let tick = min(interval, 60)
        while !stopping.load(ordering: .acquiring) {
            do {
                _ = try reconciliation.runScheduled(
                    interval: interval, log: { [log] line in log(jsonLine("reconcile", line)) },
                    isCancelled: { [self] in stopping.load(ordering: .acquiring) })
            } catch {
                log(jsonLine("reconcile", "scheduled reconciliation failed: \(error)"))
            }
            if wake.wait(timeout: .now() + tick) == .success { break }
        }
        done.signal()
    }
}
