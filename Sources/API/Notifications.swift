import Domain
import Foundation
import HTTPCore

/// App Store Server Notifications: Apple's webhook, and the admin list of what Apple sent.
struct NotificationsController: APIController {
    let projects: any ProjectStore
    let verifier: any SignedDataVerifying
    /// `nil` answers 503 on both routes (Apple retries the webhook).
    let store: (any NotificationStore)?
    let now: @Sendable () -> Date

    var routes: [APIRoute] {
        [
            // Apple is the only caller of the webhook and retries for days: only the per-client limit applies.
            APIRoute(.post, "/v1/notifications/:publicKey", .client, publicKey: Self.notificationKeySuggestion,
                     errors: ErrorContext(signedData: .notification), postNotification)
                // Apple's deliveries are counted, never refused by the account's quotas (they carry refunds).
                .counting(.notifications, quota: false),
            APIRoute(.get, "/v1/admin/projects/:id/notifications", .adminAPI, access: .admin(.customersRead), listNotifications),
        ]
    }

    static let notificationSuggestion =
        "Request body requires signedPayload (string): the body App Store Server Notifications V2 sends."
    static let notificationKeySuggestion =
        "Use the project's public key (pk_...) in the URL you enter in App Store Connect: "
        + "https://HOST/v1/notifications/:public_key."
    static let notificationListSuggestion =
        "Optional query parameters: original_transaction_id (1 to 256 characters), limit (integer 1 to 1000, "
        + "default 100)."
    /// Rows a list returns when `limit` is absent, and the most it may ask for.
    static let notificationListDefaultLimit = 100
    static let notificationListMaxLimit = 1000

    /// `POST /v1/notifications/:publicKey`: the URL a tenant gives App Store Connect.
    ///
    /// Apple retries any non-200 answer for days, so the status says exactly one thing: 200 once the notification
    /// is durably stored (or was already), 4xx when the data is not genuinely Apple's for this project (nothing is
    /// stored), 503 with `Retry-After` when it could not be stored. The verifier checks the outer JWS and every
    /// nested one (`signedTransactionInfo`, `signedRenewalInfo`) against the project before anything is written.
    func postNotification(_ request: Request, _ project: Project) throws -> Response {
        let payload = try RequestBody.signedPayload(request, suggestion: Self.notificationSuggestion)
        let facts = try verifier.verifyNotification(payload, for: project)
        let outcome = try notifications().recordNotification(facts, project: project, now: now())
        var out = JSONBody(capacity: 96)
        out.beginObject()
        out.field("status", outcome.rawValue)
        out.field("notification_uuid", facts.notificationUUID.lowercasedText)
        out.endObject()
        return Response.json(200, out.bytes)
    }

    /// `GET /v1/admin/projects/:id/notifications?original_transaction_id=…&limit=…`: what Apple sent, newest
    /// first, for support.
    func listNotifications(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let (originalTransactionId, limit) = try Self.notificationListQuery(request)
        guard try projects.project(id: id) != nil else { throw HTTPError.projectNotFound }
        let stored = try notifications().notifications(
            projectId: id, originalTransactionId: originalTransactionId, limit: limit)
        return Response.json(200, JSONBody.list("notifications", stored, capacity: 32 + 320 * stored.count,
                                                 Self.writeNotification))
    }

    /// The notification store, or 503 when the executable wired none: "unavailable, retry", never a verdict.
    private func notifications() throws -> any NotificationStore {
        try unwired(store, "Notification storage is not configured.", "notifications")
    }

    /// The list's query parameters, validated; unknown parameters are ignored, a repeated one is the last.
    static func notificationListQuery(_ request: Request) throws(HTTPError) -> (String?, Int) {
        var originalTransactionId: String?
        var limit = notificationListDefaultLimit
        var details: [ErrorDetail] = []
        for item in request.queryItems() {
            switch item.name {
            case "original_transaction_id":
                let scalars = item.value.unicodeScalars.count
                if item.value.utf8.contains(0) {
                    details.append(ErrorDetail(
                        path: ["original_transaction_id"], message: "String must not contain NUL characters"))
                } else if scalars < 1 || scalars > 256 {
                    details.append(ErrorDetail(
                        path: ["original_transaction_id"],
                        message: scalars < 1 ? "String must contain at least 1 character(s)"
                            : "String must contain at most 256 character(s)"))
                } else {
                    originalTransactionId = item.value
                }
            case "limit":
                // At most 4 digits: anything longer is out of range anyway, and Int(...) never sees a huge value.
                guard item.value.utf8.count <= 4, let value = Int(item.value) else {
                    details.append(ErrorDetail(path: ["limit"], message: "Expected integer"))
                    continue
                }
                if value < 1 || value > notificationListMaxLimit {
                    details.append(ErrorDetail(
                        path: ["limit"], message: value < 1 ? "Number must be greater than or equal to 1"
                            : "Number must be less than or equal to \(notificationListMaxLimit)"))
                } else {
                    limit = value
                }
            default:
                continue
            }
        }
        if !details.isEmpty { throw HTTPError.validation(details, suggestion: notificationListSuggestion) }
        return (originalTransactionId, limit)
    }

    static func writeNotification(_ n: StoredNotification, into body: inout JSONBody) {
        body.beginObject()
        body.field("notification_uuid", n.notificationUUID.lowercasedText)
        body.field("type", n.type)
        body.field("subtype", n.subtype)
        body.field("original_transaction_id", n.originalTransactionId)
        body.field("environment", n.environment?.rawValue)
        body.field("signed_date", n.signedDate)
        body.field("received_at", n.receivedAt)
        body.field("processed_at", n.processedAt)
        if let answer = n.consumption {
            // Only CONSUMPTION_REQUESTs (Production, Sandbox) have one: where their answer to Apple stands.
            body.key("consumption")
            body.beginObject()
            body.field("status", answer.status.rawValue)
            body.field("attempts", answer.attempts)
            body.field("last_error", answer.lastError)
            body.field("sent_at", answer.sentAt)
            body.endObject()
        }
        body.endObject()
    }
}
