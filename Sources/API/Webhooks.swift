import Domain
import Foundation
import HTTPCore

/// `/v1/admin/projects/:id/webhook…`: the project's webhook, its signing secret and its deliveries.
struct WebhooksController: APIController {
    /// The webhook use cases; `nil` answers 503.
    let administration: WebhookAdministration?

    var routes: [APIRoute] {
        let path = "/v1/admin/projects/:id/webhook"
        let secret = ErrorContext(encryptionKey: .storeWebhookSecret)
        return APIRoute.adminResource(path, write: .webhooksManage, errors: secret, put: putWebhook, get: getWebhook, delete: deleteWebhook) + [
            APIRoute(.post, path + "/rotate-secret", .adminAPI, access: .admin(.webhooksManage), errors: secret, rotateWebhookSecret),
            APIRoute(.post, path + "/test", .adminAPI, access: .admin(.webhooksManage), errors: secret, testWebhook),
            APIRoute(.get, path + "/deliveries", .adminAPI, access: .admin(.projectsRead), errors: secret, listWebhookDeliveries),
            APIRoute(.post, path + "/deliveries/:eventId/retry", .adminAPI, access: .admin(.webhooksManage), errors: secret,
                     retryWebhookDelivery),
        ]
    }

    static let webhookSuggestion = "Request body: {\"url\": \"https://…\", \"events\"?: [types]} (events default to all: "
        + WebhookEventType.all.joined(separator: ", ") + ")."

    /// The webhook use cases, or 503 when the executable wired none.
    private func webhooks() throws -> WebhookAdministration {
        try unwired(administration, "Webhooks are not configured.", "webhooks")
    }

    /// `PUT /v1/admin/projects/:id/webhook`: creates the webhook (200 with its `secret`, shown this once) or changes
    /// its URL and events (200 without the secret, which is kept).
    func putWebhook(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        var fields = try FieldValidator(request, suggestion: Self.webhookSuggestion)
        let url = fields.string("url", required: true, maxLength: WebhookRules.maxURLBytes)
        var events: [String]?
        if let value = fields.object["events"], value != .null {
            events = fields.array("events", required: true, maxItems: WebhookEventType.all.count) { fields, value, path in
                fields.checkString(value, path: path, minLength: 1, maxLength: 64)
            }
        }
        try fields.check(suggestion: Self.webhookSuggestion)
        let configured = try RequestBody.translating(suggestion: Self.webhookSuggestion) {
            try webhooks().configure(projectId: id, url: url ?? "", events: events)
        }
        return Response.json(200, Self.webhookBody(configured.endpoint, secret: configured.secret))
    }

    /// `GET /v1/admin/projects/:id/webhook`: the configuration, never the secret.
    func getWebhook(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        return Response.json(200, Self.webhookBody(try webhooks().endpoint(projectId: id), secret: nil))
    }

    /// `DELETE /v1/admin/projects/:id/webhook`: the webhook, its undelivered events and its delivery log.
    func deleteWebhook(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        try webhooks().delete(projectId: id)
        return Response(status: 204)
    }

    /// `POST /v1/admin/projects/:id/webhook/rotate-secret`: a new secret (shown this once); the previous one keeps
    /// signing for 24 hours.
    func rotateWebhookSecret(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let configured = try webhooks().rotateSecret(projectId: id)
        return Response.json(200, Self.webhookBody(configured.endpoint, secret: configured.secret))
    }

    /// `POST /v1/admin/projects/:id/webhook/test`: queues a `ping` event; 202 with its id.
    func testWebhook(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let eventId = try webhooks().sendTest(projectId: id)
        var body = JSONBody(capacity: 96)
        body.beginObject()
        body.field("event_id", eventId)
        body.field("type", "ping")
        body.field("status", "pending")
        body.endObject()
        return Response.json(202, body.bytes)
    }

    /// `GET /v1/admin/projects/:id/webhook/deliveries?status=&limit=`: the newest events (`limit` 1…200, default
    /// 50), each with its attempts and their response codes.
    func listWebhookDeliveries(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let query = request.queryItems()
        var status: WebhookDeliveryStatus?
        if let raw = query.last(where: { $0.name == "status" })?.value {
            guard let parsed = WebhookDeliveryStatus(rawValue: raw) else {
                throw HTTPError.validation(
                    [ErrorDetail(path: ["status"], message: "Invalid enum value. Expected 'pending' | 'delivered' | 'failed'")],
                    suggestion: "Omit status, or pass pending, delivered or failed.")
            }
            status = parsed
        }
        var limit = 50
        if let raw = query.last(where: { $0.name == "limit" })?.value {
            guard raw.utf8.count <= 3, let n = Int(raw), (1...200).contains(n) else {
                throw HTTPError.validation([ErrorDetail(path: ["limit"], message: "Must be an integer from 1 to 200")],
                                          suggestion: "Omit limit (50) or pass 1 to 200.")
            }
            limit = n
        }
        let deliveries = try webhooks().deliveries(projectId: id, status: status, limit: limit)
        return Response.json(200, JSONBody.list("deliveries", deliveries, capacity: 64 + 320 * deliveries.count,
                                                 Self.writeDelivery))
    }

    /// `POST /v1/admin/projects/:id/webhook/deliveries/:eventId/retry`: sends the event again now (whatever its
    /// status), with a fresh retry window; 202 with the delivery.
    func retryWebhookDelivery(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let eventId = request.pathParameters["eventId"] ?? ""
        let delivery = try webhooks().retry(projectId: id, eventId: eventId)
        var body = JSONBody(capacity: 320)
        Self.writeDelivery(delivery, into: &body)
        return Response.json(202, body.bytes)
    }

    /// `{"url","events","secret"?,"previous_secret_expires_at","created_at","updated_at"}`; `secret` only when given.
    static func webhookBody(_ endpoint: WebhookEndpoint, secret: String?) -> [UInt8] {
        var body = JSONBody(capacity: 512)
        body.beginObject()
        body.field("url", endpoint.url)
        body.field("events", endpoint.events ?? WebhookEventType.all)
        if let secret {
            body.field("secret", secret)
        }
        body.field("previous_secret_expires_at", endpoint.previousSecretExpiresAt)
        body.field("created_at", endpoint.createdAt)
        body.field("updated_at", endpoint.updatedAt)
        body.endObject()
        return body.bytes
    }

    static func writeDelivery(_ delivery: WebhookDelivery, into body: inout JSONBody) {
        body.beginObject()
        body.field("event_id", delivery.eventId)
        body.field("type", delivery.type)
        body.field("user_id", delivery.userId)
        body.field("status", delivery.status.rawValue)
        body.field("created_at", delivery.createdAt)
        body.field("next_attempt_at", delivery.nextAttemptAt)
        body.field("delivered_at", delivery.deliveredAt)
        body.objects("attempts", delivery.attempts) { attempt, body in
            body.field("attempt", attempt.attempt)
            body.field("at", attempt.at)
            body.field("status_code", attempt.statusCode.map(Int64.init))
            body.field("error", attempt.error)
            body.field("duration_ms", attempt.durationMs)
        }
        body.endObject()
    }
}
