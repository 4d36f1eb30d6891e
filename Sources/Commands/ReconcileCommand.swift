import Verification
import Jobs
import API
import AppStoreJWS
import Domain
import Foundation
import JSON
import Storage

/// `bouncer reconcile [--project ID]`: the admin API's reconciliation, now, from a terminal, with progress.
public enum ReconcileCommand {
    static let usage = """
        usage: bouncer reconcile [--project PROJECT_ID]

        Asks Apple about one project (or every project with App Store credentials) now: the current state of each
        known subscription (Get All Subscription Statuses), refunds of other purchases (Get Transaction Info), then
        Notification History since the last complete catch-up, applied exactly once. The same run as
        POST /v1/admin/projects/{id}/reconcile, recorded in reconcile_runs with trigger cli; a project another run
        holds is reported and skipped. Progress goes to stderr, one JSON result per project to stdout.
        Uses DATABASE_URL (or the embedded PostgreSQL), BOUNCER_ENCRYPTION_KEY, BOUNCER_APPLE_API_* and
        BOUNCER_RECONCILE_MAX_CALLS / _CALLS_PER_SECOND like `bouncer serve`.
        Exit status: 0 every run finished (completed or partial), 1 some run failed or could not start (Apple
        unavailable, credentials refused, a run in progress, database), 2 invalid arguments or configuration.

        """

    public static let command = Command(name: "reconcile", summary: "Reconcile purchases with Apple now (one or all projects)",
                                 usage: usage) { args in run(args) }

    static func run(_ args: [String]) -> Int32 {
        var projectId: UUID?
        var rest = ArraySlice(args)
        while let flag = rest.popFirst() {
            switch flag {
            case "--help", "-h":
                CLI.out(usage)
                return 0
            case "--project":
                guard let value = rest.popFirst(), let id = UUID(uuidString: value) else {
                    CLI.err("bouncer: --project needs a project id (a UUID)\n\n" + usage)
                    return 2
                }
                projectId = id
            default:
                CLI.err("bouncer: unknown option '\(flag)'\n\n" + usage)
                return 2
            }
        }
        guard let settings = ServeSettings.fromProcessEnvironment(command: "bouncer") else { return 2 }
        guard let roots = settings.trustedRoots(command: "bouncer") else { return 2 }
        let appStore: any AppleServerAPI
        do {
            appStore = try ServeCommand.makeAppStoreClient(settings.appleAPI)
        } catch {
            CLI.err("bouncer: App Store Server API client: \(error)\n")
            return 2
        }
        let log: @Sendable (String) -> Void = { CLI.err($0 + "\n") }
        guard let database = settings.openDatabase(command: "bouncer", log: log) else { return 1 }
        defer { database.close(log: log) }
        let projects = PostgresProjectStore(pool: database.pool)
        // Apple calls count toward the projects' accounts as the server's do, stored when the command ends.
        let usage = UsageMeter(store: PostgresUsageStore(pool: database.pool))
        defer {
            do { try usage.flush(now: Date()) } catch { CLI.err("bouncer: usage: \(error)\n") }
        }
        let reconciliation = ReconcileWiring.reconciliation(
            settings: settings, database: database, projects: projects,
            appStore: MeteredAppleServerAPI(appStore, meter: usage, now: { Date() }),
            verifier: AppStoreVerifier(verifier: SignedDataVerifier(roots: roots)),
            credentials: CredentialCommands.administration(settings, database))
        let ids: [UUID]
        do {
            ids = try projectId.map { [$0] } ?? PostgresReconciliationStore(pool: database.pool).projectsWithCredentials()
        } catch {
            CLI.err("bouncer: \(error)\n")
            return 1
        }
        if ids.isEmpty { CLI.err("no project has App Store credentials: nothing to reconcile\n") }
        var status: Int32 = 0
        for id in ids {
            let name = "project \(id.lowercasedText)"
            do {
                let report = try reconciliation.reconcile(projectId: id, trigger: .cli) { line in
                    CLI.err("\(name): \(line)\n")
                }
                let json = Representations.reconcileRun(report)
                CLI.out(((try? JSONParser.parse(json).serializedString(pretty: true)) ?? String(decoding: json, as: UTF8.self)) + "\n")
            } catch {
                CLI.err("\(name): \(error)\n")
                status = 1
            }
        }
        return status
    }
}
