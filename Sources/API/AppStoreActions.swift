import Domain
import Foundation
import HTTPCore

/// Operator helpers that call Apple with the project's credentials: test notifications, renewal extensions.
struct AppStoreActionsController: APIController {
    /// The operator helpers (shared rules in `Domain.AppStoreActions`), at this server's clock.
    let actions: AppStoreActions

    var routes: [APIRoute] {
        [
            APIRoute(.post, "/v1/admin/projects/:id/app-store/test-notification", .adminAPI, access: .admin(.credentialsManage),
                     requestTestNotification),
            APIRoute(.get, "/v1/admin/projects/:id/app-store/test-notification/:token", .adminAPI, access: .admin(.projectsRead),
                     getTestNotification),
            APIRoute(.post, "/v1/admin/projects/:id/subscriptions/:originalTransactionId/extend", .adminAPI,
                     access: .admin(.customersWrite), extendSubscription),
        ]
    }

    static let testNotificationSuggestion = "Optional query parameter: environment (Production or Sandbox; default "
        + "Production when the project allows it, else Sandbox)."
    static let extendSuggestion = "Request body requires extend_by_days (integer 1 to 90) and reason_code (integer: "
        + "0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage)."

    /// `POST /v1/admin/projects/:id/app-store/test-notification[?environment=]`: Apple's Request a Test
    /// Notification; answers the token to ask about.
    func requestTestNotification(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let environment = try Self.testEnvironmentQuery(request)
        let (token, asked) = try RequestBody.translating(suggestion: Self.testNotificationSuggestion) {
            try actions.requestTestNotification(projectId: id, environment: environment)
        }
        var body = JSONBody(capacity: 128)
        body.beginObject()
        body.field("token", token)
        body.field("environment", asked.rawValue)
        body.endObject()
        return Response.json(200, body.bytes)
    }

    /// `GET /v1/admin/projects/:id/app-store/test-notification/:token[?environment=]`: what Apple says about its
    /// delivery, and whether this Bouncer stored the notification (`received`).
    func getTestNotification(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let environment = try Self.testEnvironmentQuery(request)
        let token = request.pathParameters["token"] ?? ""
        let report = try RequestBody.translating(suggestion: "Use the token that POST …/app-store/test-notification returned.") {
            try actions.testNotificationStatus(projectId: id, token: token, environment: environment)
        }
        var body = JSONBody(capacity: 256 + 64 * report.sendAttempts.count)
        body.beginObject()
        body.field("token", report.token)
        body.field("environment", report.environment.rawValue)
        body.field("notification_uuid", report.notificationUUID.lowercasedText)
        body.objects("apple_send_attempts", report.sendAttempts) { attempt, body in
            body.field("attempt_date", attempt.attemptDate)
            body.field("result", attempt.result)
        }
        body.field("received", report.receivedAt != nil)
        body.field("received_at", report.receivedAt)
        body.endObject()
        return Response.json(200, body.bytes)
    }

    /// `POST /v1/admin/projects/:id/subscriptions/:originalTransactionId/extend`: Extend a Subscription Renewal
    /// Date with a fresh request identifier; the call and its result are recorded.
    func extendSubscription(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let originalTransactionId = request.pathParameters["originalTransactionId"] ?? ""
        var fields = try FieldValidator(request, suggestion: Self.extendSuggestion)
        let (days, reason) = Self.extensionFields(&fields)
        fields.add(AppStoreActions.problems(extendByDays: days, reasonCode: reason))
        fields.add(TransactionLookup.problems(transactionId: originalTransactionId, path: ["originalTransactionId"]))
        try fields.check(suggestion: Self.extendSuggestion)
        guard let days, let reason else {
            throw HTTPError.validation([ErrorDetail(path: [], message: "Required")], suggestion: Self.extendSuggestion)
        }
        let record = try RequestBody.translating(suggestion: Self.extendSuggestion) {
            try actions.extendRenewal(projectId: id, originalTransactionId: originalTransactionId,
                                                 extendByDays: days, reasonCode: reason)
        }
        var body = JSONBody(capacity: 320)
        body.beginObject()
        body.field("original_transaction_id", record.originalTransactionId)
        body.field("environment", record.environment.rawValue)
        body.field("request_identifier", record.requestIdentifier.lowercasedText)
        body.field("extend_by_days", record.extendByDays)
        body.field("reason_code", record.reasonCode)
        body.field("success", record.success == true)
        body.field("effective_date", record.effectiveDate)
        body.field("web_order_line_item_id", record.webOrderLineItemId)
        body.endObject()
        return Response.json(200, body.bytes)
    }

    /// The required `extend_by_days` and `reason_code` of an extension (one subscription's or a product's).
    static func extensionFields(_ fields: inout FieldValidator) -> (days: Int?, reason: Int?) {
        let days = fields.int("extend_by_days")
        let reason = fields.int("reason_code")
        if !fields.has("extend_by_days") { fields.fail(["extend_by_days"], "Required") }
        if !fields.has("reason_code") { fields.fail(["reason_code"], "Required") }
        return (days, reason)
    }

    /// `environment` from the query: Production or Sandbox; absent → the use case's default.
    static func testEnvironmentQuery(_ request: Request) throws(HTTPError) -> StoreEnvironment? {
        try environmentQuery(request, suggestion: testNotificationSuggestion)
    }

    /// `environment` from the query (Production or Sandbox), else nil; anything else is 400 with `suggestion`.
    static func environmentQuery(_ request: Request, suggestion: String) throws(HTTPError) -> StoreEnvironment? {
        var environment: StoreEnvironment?
        for item in request.queryItems() where item.name == "environment" {
            guard item.value == StoreEnvironment.production.rawValue || item.value == StoreEnvironment.sandbox.rawValue
            else {
                throw HTTPError.validation(
                    [ErrorDetail(path: ["environment"], message: "Invalid enum value. Expected 'Production' | 'Sandbox'")],
                    suggestion: suggestion)
            }
            environment = StoreEnvironment(rawValue: item.value)
        }
        return environment
    }
}
