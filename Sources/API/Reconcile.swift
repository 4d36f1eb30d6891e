import Domain
import Foundation
import HTTPCore

/// `/v1/admin/projects/:id/reconcile…`: reconciliation with Apple, on demand, and its runs.
struct ReconciliationController: APIController {
    /// The use case; `nil` answers 503 (no App Store client wired).
    let reconciler: Reconciliation?

    var routes: [APIRoute] {
        [
            APIRoute(.post, "/v1/admin/projects/:id/reconcile", .adminAPI, access: .admin, reconcileProject),
            APIRoute(.get, "/v1/admin/projects/:id/reconcile/runs", .adminAPI, access: .admin, listReconcileRuns),
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
        var body = JSONBody(capacity: 128 + 512 * runs.count)
        body.raw(#"{"runs":["#)
        for (i, run) in runs.enumerated() {
            if i > 0 { body.raw(",") }
            Self.writeRun(run, changes: true, into: &body)
        }
        body.raw("]}")
        return Response.json(200, body.bytes)
    }

    /// A run as `POST …/reconcile` answers it: `checked`, `changed`, `notifications_applied`, `errors` first.
    static func reconcileBody(_ report: ReconcileReport) -> [UInt8] {
        var body = JSONBody(capacity: 512)
        writeRun(report, changes: false, into: &body)
        return body.bytes
    }

    static func writeRun(_ run: ReconcileReport, changes: Bool, into body: inout JSONBody) {
        body.raw(#"{"checked":"#)
        body.int(Int64(run.checked))
        body.raw(#","changed":"#)
        body.int(Int64(run.changed))
        body.raw(#","notifications_applied":"#)
        body.int(Int64(run.notificationsApplied))
        body.raw(#","errors":["#)
        for (i, problem) in run.errors.enumerated() {
            if i > 0 { body.raw(",") }
            body.raw(#"{"stage":"#)
            body.string(problem.stage)
            body.raw(#","environment":"#)
            body.stringOrNull(problem.environment?.rawValue)
            body.raw(#","original_transaction_id":"#)
            body.stringOrNull(problem.originalTransactionId)
            body.raw(#","message":"#)
            body.string(problem.message)
            body.raw("}")
        }
        body.raw(#"],"error_count":"#)
        body.int(Int64(run.errorCount))
        body.raw(#","skipped":"#)
        body.int(Int64(run.skipped))
        body.raw(#","apple_calls":"#)
        body.int(Int64(run.appleCalls))
        body.raw(#","run_id":"#)
        body.int(run.runId)
        body.raw(#","trigger":"#)
        body.string(run.trigger.rawValue)
        body.raw(#","outcome":"#)
        body.string(run.outcome.rawValue)
        body.raw(#","started_at":"#)
        body.date(run.startedAt)
        body.raw(#","finished_at":"#)
        body.dateOrNull(run.finishedAt)
        if changes {
            body.raw(#","changes":["#)
            for (i, change) in run.changes.enumerated() {
                if i > 0 { body.raw(",") }
                writeChange(change, into: &body)
            }
            body.raw("]")
        }
        body.raw("}")
    }

    static func writeChange(_ change: ReconcileChange, into body: inout JSONBody) {
        body.raw(#"{"environment":"#)
        body.string(change.environment.rawValue)
        body.raw(#","original_transaction_id":"#)
        body.string(change.originalTransactionId)
        body.raw(#","source":"reconcile","via":"#)
        body.string(change.via.rawValue)
        body.raw(#","notification_uuid":"#)
        body.stringOrNull(change.notificationUUID?.uuidString.lowercased())
        body.raw(#","notification_type":"#)
        body.stringOrNull(change.notificationType)
        body.raw(#","latest_transaction_id":"#)
        body.string(change.latestTransactionId)
        body.raw(#","before_status":"#)
        body.stringOrNull(change.beforeStatus?.rawValue)
        body.raw(#","after_status":"#)
        body.string(change.afterStatus.rawValue)
        body.raw(#","before_expires_date":"#)
        body.dateOrNull(change.beforeExpiresDate)
        body.raw(#","after_expires_date":"#)
        body.dateOrNull(change.afterExpiresDate)
        body.raw(#","before_revocation_date":"#)
        body.dateOrNull(change.beforeRevocationDate)
        body.raw(#","after_revocation_date":"#)
        body.dateOrNull(change.afterRevocationDate)
        body.raw(#","at":"#)
        body.date(change.at)
        body.raw("}")
    }
}

extension Representations {
    /// A run as `POST /v1/admin/projects/:id/reconcile` returns it (the CLI prints the same).
    public static func reconcileRun(_ report: ReconcileReport) -> [UInt8] {
        ReconciliationController.reconcileBody(report)
    }
}
