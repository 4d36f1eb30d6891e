public import Domain
import Foundation
import HTTPCore

/// `/v1/admin/projects/:id/reconcile…`: reconciliation with Apple, on demand, and its runs.
struct ReconciliationController: APIController {
    /// The use case; `nil` answers 503 (no App Store client wired).
    let reconciler: Reconciliation?

    var routes: [APIRoute] {
        [
            APIRoute(.post, "/v1/admin/projects/:id/reconcile", .adminAPI, access: .admin(.projectsWrite), reconcileProject),
            APIRoute(.get, "/v1/admin/projects/:id/reconcile/runs", .adminAPI, access: .admin(.projectsRead), listReconcileRuns),
        ]
    }

    /// The reconciliation use case, or 503 when the executable wired none (no App Store client).
    private func reconciliation() throws -> Reconciliation {
        try unwired(reconciler, "Reconciliation is not configured.", "reconciliation")
    }

    /// `POST /v1/admin/projects/:id/reconcile`: one run now, under the project's lock (409
    /// `RECONCILE_IN_PROGRESS` while another holds it); 200 with the run's counts. Apple unavailable → 503
    /// `APPLE_UNAVAILABLE`; Apple refusing the credentials → 502 `APP_STORE_AUTH_FAILED`: never a partial answer.
    func reconcileProject(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let report = try reconciliation().reconcile(projectId: id, trigger: .admin)
        return Response.json(200, Self.reconcileBody(report))
    }

    /// `GET /v1/admin/projects/:id/reconcile/runs`: the last 20 runs (`?limit=` 1…100), newest first, each with
    /// the changes it made (at most 100 per run).
    func listReconcileRuns(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        var limit = 20
        if let raw = request.queryItems().last(where: { $0.name == "limit" })?.value {
            guard raw.utf8.count <= 3, let n = Int(raw), (1...100).contains(n) else {
                throw HTTPError.validation([ErrorDetail(path: ["limit"], message: "Must be an integer from 1 to 100")],
                                          suggestion: "Omit limit (20) or pass 1 to 100.")
            }
            limit = n
        }
        let runs = try reconciliation().runs(projectId: id, limit: limit)
        return Response.json(200, JSONBody.list("runs", runs, capacity: 128 + 512 * runs.count) { run, body in
            Self.writeRun(run, changes: true, into: &body)
        })
    }

    /// A run as `POST …/reconcile` answers it: `checked`, `changed`, `notifications_applied`, `errors` first.
    static func reconcileBody(_ report: ReconcileReport) -> [UInt8] {
        var body = JSONBody(capacity: 512)
        writeRun(report, changes: false, into: &body)
        return body.bytes
    }

    static func writeRun(_ run: ReconcileReport, changes: Bool, into body: inout JSONBody) {
        body.beginObject()
        body.field("checked", run.checked)
        body.field("changed", run.changed)
        body.field("notifications_applied", run.notificationsApplied)
        body.field("refunds_found", run.refundsFound)
        body.objects("errors", run.errors) { problem, body in
            body.field("stage", problem.stage)
            body.field("environment", problem.environment?.rawValue)
            body.field("original_transaction_id", problem.originalTransactionId)
            body.field("message", problem.message)
        }
        body.field("error_count", run.errorCount)
        body.field("skipped", run.skipped)
        body.field("apple_calls", run.appleCalls)
        body.field("run_id", run.runId)
        body.field("trigger", run.trigger.rawValue)
        body.field("outcome", run.outcome.rawValue)
        body.field("started_at", run.startedAt)
        body.field("finished_at", run.finishedAt)
        if changes {
            body.array("changes", run.changes) { change, body in writeChange(change, into: &body) }
        }
        body.endObject()
    }

    static func writeChange(_ change: ReconcileChange, into body: inout JSONBody) {
        body.beginObject()
        body.field("environment", change.environment.rawValue)
        body.field("original_transaction_id", change.originalTransactionId)
        body.field("source", "reconcile")
        body.field("via", change.via.rawValue)
        body.field("notification_uuid", change.notificationUUID?.lowercasedText)
        body.field("notification_type", change.notificationType)
        body.field("latest_transaction_id", change.latestTransactionId)
        body.field("before_status", change.beforeStatus?.rawValue)
        body.field("after_status", change.afterStatus.rawValue)
        body.field("before_expires_date", change.beforeExpiresDate)
        body.field("after_expires_date", change.afterExpiresDate)
        body.field("before_revocation_date", change.beforeRevocationDate)
        body.field("after_revocation_date", change.afterRevocationDate)
        body.field("at", change.at)
        body.endObject()
    }
}

extension Representations {
    /// A run as `POST /v1/admin/projects/:id/reconcile` returns it (the CLI prints the same).
    public static func reconcileRun(_ report: ReconcileReport) -> [UInt8] {
        ReconciliationController.reconcileBody(report)
    }
}
