public import Domain
import Foundation
import Glibc
public import Jobs
import Storage

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
        int("BOUNCER_RECONCILE_MAX_CALLS", "calls to Apple per project and reconciliation run (default 1000)",
            1...1_000_000, maxLength: 7) {
            $0.reconcile.run.maxCallsPerRun = $1
            $0.reconcile.run.historyReserve = min($0.reconcile.run.historyReserve, max(1, $1 / 4))
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
public enum ReconcileWiring {
    /// `caches`: the serving process's (its read cache and the other instances' hear of each change); without,
    /// the changes are announced by `NOTIFY` alone (the CLI).
    public static func reconciliation(
        settings: ServeSettings, database: Database, projects: any ProjectStore, appStore: any AppleServerAPI,
        verifier: any SignedDataVerifying, credentials: CredentialAdministration, caches: Caches? = nil
    ) -> Reconciliation {
        let store = PostgresReconciliationStore(pool: database.pool)
        let announced = caches?.announcing(store) ?? AnnouncingReconciliationStore(
            inner: store, announce: AnnouncingReconciliationStore.notifying(pool: database.pool))
        return Reconciliation(
            projects: projects, credentials: credentials,
            store: announced, appStore: appStore, verifier: verifier,
            settings: settings.reconcile.run, instance: ProcessIdentity.instance, now: { Date() },
            sleep: { seconds in usleep(UInt32(max(0, min(seconds, 60)) * 1_000_000)) })
    }
}

