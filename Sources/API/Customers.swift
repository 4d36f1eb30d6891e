public import Domain
public import Foundation
import HTTPCore
import JSON

/// `/v1/admin/projects/:id/users/:userId/…`: manual grants, the customer timeline, export and erase, and the search
/// by transaction id. Each accepts the admin token or the project's secret key (`Access.adminOrSecretKey`).
struct CustomersController: APIController {
    let projects: any ProjectStore
    /// The support use cases, at this server's clock.
    let support: CustomerSupport
    /// Support's search by an App Store order id (Apple's Look Up Order ID).
    let orders: OrderLookup
    /// Erase's `reset_app_account_token` (Apple's Set App Account Token).
    let appAccountTokens: AppAccountTokens
    let now: @Sendable () -> Date

    var routes: [APIRoute] {
        // A project's users: the admin token or the project's secret key (a customer's backend); both share the
        // admin bucket (these are support tools, not a hot path).
        let user = "/v1/admin/projects/:id/users/:userId"
        return [
            APIRoute(.post, user + "/grants", .adminAPI, access: .adminOrSecretKey(.customersWrite), createGrant),
            APIRoute(.delete, user + "/grants/:grantId", .adminAPI, access: .adminOrSecretKey(.customersWrite), deleteGrant),
            APIRoute(.get, user + "/timeline", .adminAPI, access: .adminOrSecretKey(.customersRead), getTimeline),
            APIRoute(.get, user + "/export", .adminAPI, access: .adminOrSecretKey(.customersExport), exportUser),
            APIRoute(.delete, user, .adminAPI, access: .adminOrSecretKey(.customersErase), eraseUser),
            APIRoute(.get, "/v1/admin/projects/:id/transactions/:transactionId", .adminAPI, access: .adminOrSecretKey(.customersRead),
                     getTransactionHolders),
            APIRoute(.get, "/v1/admin/projects/:id/orders/:orderId", .adminAPI, access: .admin(.customersRead), getOrder),
        ]
    }

    static let grantSuggestion = "Request body requires entitlement (1 to 128 characters) and reason (1 to 500 "
        + "characters); optional expires_at (ISO 8601, in the future; omit for no end), e.g. "
        + "{\"entitlement\": \"pro\", \"reason\": \"support ticket 42\", \"expires_at\": \"2027-01-01T00:00:00Z\"}."
    static let userIdSuggestion = "Put the user id (1 to 256 characters) in the URL path."
    static let orderIdSuggestion = "Put the order id from the customer's App Store email receipt or purchase history "
        + "(letters and digits, at most \(OrderLookup.maxOrderIdLength), e.g. MK5TTTVWJH) in the URL path."
    static let grantIdSuggestion = "Use the grant's id (a UUID) from the grant's 201 answer or the user's export."

    /// `POST /v1/admin/projects/:id/users/:userId/grants` → 201 with the grant.
    func createGrant(_ request: Request) throws -> Response {
        let (projectId, userId) = try authorizedUser(request)
        var fields = try FieldValidator(request, suggestion: Self.grantSuggestion)
        let entitlement = fields.string("entitlement", required: true, minLength: 0)
        let reason = fields.string("reason", required: true, minLength: 0)
        var expiresAt: Date?
        if let value = fields.object["expires_at"], !value.isNull {
            if let text = value.stringValue, let date = Self.parseTimestamp(text) {
                expiresAt = date
            } else {
                fields.fail(["expires_at"], "Invalid datetime (ISO 8601, e.g. 2027-01-01T00:00:00Z)")
            }
        }
        let new = NewGrant(userId: userId, entitlement: entitlement ?? "", expiresAt: expiresAt, reason: reason ?? "")
        let ruleProblems = GrantRules.problems(in: new, at: now()).filter { problem in
            problem.path.first.map { $0 == "userId" || fields.parsed($0) } ?? true
        }
        fields.add(ruleProblems)
        try fields.check(suggestion: Self.grantSuggestion)
        let grant = try RequestBody.translating(suggestion: Self.grantSuggestion) { try support.grant(projectId: projectId, new) }
        var out = JSONBody(capacity: 320)
        Self.writeGrant(grant, at: now(), into: &out)
        return Response.json(201, out.bytes)
    }

    /// `DELETE /v1/admin/projects/:id/users/:userId/grants/:grantId` → 200 with the grant, now removed (it stays in
    /// the timeline). Removing a removed grant answers the same.
    func deleteGrant(_ request: Request) throws -> Response {
        let (projectId, userId) = try authorizedUser(request)
        let grantId = try PathParameters.uuid(request, "grantId", suggestion: Self.grantIdSuggestion)
        let grant = try support.revokeGrant(projectId: projectId, userId: userId, grantId: grantId)
        var out = JSONBody(capacity: 320)
        Self.writeGrant(grant, at: now(), into: &out)
        return Response.json(200, out.bytes)
    }

    /// `GET /v1/admin/projects/:id/users/:userId/timeline`.
    func getTimeline(_ request: Request) throws -> Response {
        let (projectId, userId) = try authorizedUser(request)
        let timeline = try support.timeline(projectId: projectId, userId: userId)
        var out = JSONBody(capacity: 256 + 256 * timeline.events.count)
        Self.writeTimeline(timeline, into: &out)
        return Response.json(200, out.bytes)
    }

    /// `GET /v1/admin/projects/:id/users/:userId/export`: everything stored about the user, and the timeline.
    func exportUser(_ request: Request) throws -> Response {
        let (projectId, userId) = try authorizedUser(request)
        let (facts, timeline) = try support.export(projectId: projectId, userId: userId)
        return Response.json(200, Self.exportBody(facts, timeline: timeline, at: now()))
    }

    /// `DELETE /v1/admin/projects/:id/users/:userId`: erases the user in one database transaction → 200 with what
    /// changed (idempotent: an unknown user answers zeros).
    /// With `{"reset_app_account_token": true}` the user's purchases are first re-keyed at Apple (a fresh random
    /// token each); Apple's failure answers its error and erases nothing.
    func eraseUser(_ request: Request) throws -> Response {
        let (projectId, userId) = try authorizedUser(request)
        var reset = false
        if !request.body.isEmpty {
            var fields = try FieldValidator(request, suggestion: Self.eraseSuggestion)
            reset = fields.bool("reset_app_account_token") ?? false
            try fields.check(suggestion: Self.eraseSuggestion)
        }
        let rekeyed = reset ? try appAccountTokens.reset(projectId: projectId, userId: userId) : nil
        let summary = try support.erase(projectId: projectId, userId: userId)
        return Response.json(200, Self.erasureBody(userId: userId, summary, appAccountTokensReset: rekeyed))
    }

    static let eraseSuggestion = "No body, or {\"reset_app_account_token\": true} to re-key the user's purchases at "
        + "Apple first (Set App Account Token with a fresh random token each)."

    /// `GET /v1/admin/projects/:id/transactions/:transactionId`: the recorded transaction and the users currently
    /// bound to its purchase (support's search by transaction id).
    func getTransactionHolders(_ request: Request) throws -> Response {
        let projectId = try PathParameters.projectId(request)
        let found = try support.holders(projectId: projectId, transactionId: request.pathParameters["transactionId"] ?? "")
        return Response.json(200, Self.holdersBody(found))
    }

    /// `GET /v1/admin/projects/:id/orders/:orderId`: Apple's Look Up Order ID, verified, and the users holding each
    /// of the order's purchases here. Nothing is recorded.
    func getOrder(_ request: Request) throws -> Response {
        let projectId = try PathParameters.projectId(request)
        let orderId = request.pathParameters["orderId"] ?? ""
        let problems = OrderLookup.problems(orderId: orderId)
        guard problems.isEmpty else {
            throw HTTPError.validation(problems.map(ErrorDetail.init), suggestion: Self.orderIdSuggestion)
        }
        let found = try orders.lookUp(orderId: orderId, projectId: projectId)
        let at = now()
        var out = JSONBody(capacity: 128 + 256 * found.transactions.count)
        out.beginObject()
        out.field("order_id", found.orderId)
        out.field("status", found.isValid ? "valid" : "invalid")
        out.objects("transactions", found.transactions) { transaction, body in
            ReceiptRepresentation.writeTransaction(transaction, status: StatusRules.evaluate(transaction, at: at), into: &body)
        }
        out.objects("holders", found.holders) { holder, body in
            body.field("original_transaction_id", holder.originalTransactionId)
            body.field("user_ids", holder.userIds)
        }
        out.endObject()
        return Response.json(200, out.bytes)
    }

    // MARK: - Parsing

    /// The project id and user id of the path (the caller is authorized for that project: `Access.adminOrSecretKey`);
    /// the user id in the form the project stores it (`AccountBindingRules.canonicalUserId`).
    private func authorizedUser(_ request: Request) throws -> (UUID, String) {
        let projectId = try PathParameters.projectId(request)
        let userId = request.pathParameters["userId"] ?? ""
        let problems = GrantRules.problems(userId: userId)
        guard problems.isEmpty else {
            throw HTTPError.validation(problems.map(ErrorDetail.init),
                                      suggestion: Self.userIdSuggestion)
        }
        // An unknown project keeps the id as given: the use case answers PROJECT_NOT_FOUND.
        let policy = try projects.project(id: projectId)?.appAccountTokenPolicy ?? .ignore
        return (projectId, AccountBindingRules.canonicalUserId(userId, policy: policy))
    }

    /// An RFC 3339 timestamp with or without fractional seconds (admin input; not a hot path).
    static func parseTimestamp(_ text: String) -> Date? {
        guard text.utf8.count <= 64 else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    // MARK: - Rendering

    static func holdersBody(_ found: TransactionHolders) -> [UInt8] {
        var out = JSONBody(capacity: 256 + 64 * found.userIds.count)
        out.beginObject()
        out.field("transaction_id", found.transactionId)
        out.field("original_transaction_id", found.originalTransactionId)
        out.field("product_id", found.productId)
        out.field("environment", found.environment.rawValue)
        out.field("source", found.source)
        out.field("user_ids", found.userIds)
        out.endObject()
        return out.bytes
    }

    static func erasureBody(userId: String, _ summary: ErasureSummary, appAccountTokensReset: Int? = nil) -> [UInt8] {
        var out = JSONBody(capacity: 320)
        out.beginObject()
        out.field("user_id", userId)
        out.field("erased", true)
        out.field("bindings_deleted", summary.bindingsDeleted)
        out.field("grants_anonymised", summary.grantsAnonymised)
        out.field("app_transactions_unbound", summary.appTransactionsUnbound)
        out.field("ownership_events_anonymised", summary.ownershipEventsAnonymised)
        out.field("app_account_tokens_cleared", summary.appAccountTokensCleared)
        out.field("events_dropped", summary.eventsDropped)
        out.field("events_anonymised", summary.eventsAnonymised)
        if let appAccountTokensReset { out.field("app_account_tokens_reset", appAccountTokensReset) }
        out.endObject()
        return out.bytes
    }

    static func writeGrant(_ grant: Grant, at now: Date, into body: inout JSONBody) {
        body.beginObject()
        body.field("id", grant.id.lowercasedText)
        body.field("source", "grant")
        body.field("user_id", grant.userId)
        body.field("entitlement", grant.entitlement)
        body.field("expires_at", grant.expiresAt)
        body.field("reason", grant.reason)
        body.field("created_at", grant.createdAt)
        body.field("revoked_at", grant.revokedAt)
        body.field("active", grant.isActive(at: now))
        body.endObject()
    }

    static func writeTimeline(_ timeline: CustomerTimeline, into body: inout JSONBody) {
        body.object { body in
            body.field("user_id", timeline.userId)
            body.objects("entitlements", timeline.entitlements) { e, body in
                body.field("id", e.id)
                body.field("active", e.active)
                body.field("reason", e.reason)
            }
            body.objects("events", timeline.events) { e, body in
                body.field("at", e.at)
                body.field("source", e.source)
                body.field("type", e.type)
                body.field("transaction_id", e.transactionId)
                body.field("summary", e.summary)
                body.field("effect", e.effect)
            }
        }
    }

    static func exportBody(_ facts: CustomerFacts, timeline: CustomerTimeline, at now: Date) -> [UInt8] {
        var body = JSONBody(capacity: 1024 + 1024 * facts.transactions.count)
        body.object { body in
            body.field("user_id", facts.userId)
            body.field("exported_at", now)
            body.objects("bindings", facts.purchases) { held, body in
                body.field("original_transaction_id", held.purchase.originalTransactionId)
                body.field("environment", held.purchase.environment.rawValue)
                body.field("product_id", held.purchase.productId)
                body.field("device_id", held.deviceId)
                body.field("bound_at", held.boundAt)
                body.field("revoked_at", held.revokedAt)
            }
            var devices: [String] = []
            for device in facts.purchases.compactMap(\.deviceId) where !devices.contains(device) { devices.append(device) }
            body.field("device_ids", devices)
            body.objects("transactions", facts.transactions) { t, body in
                body.field("transaction_id", t.transactionId)
                body.field("original_transaction_id", t.originalTransactionId)
                body.field("environment", t.environment.rawValue)
                body.field("product_id", t.productId)
                body.field("purchase_date", t.purchaseDate)
                body.field("expires_date", t.expiresDate)
                body.field("revocation_date", t.revocationDate)
                body.field("source", t.source)
                body.field("first_seen_at", t.firstSeenAt)
                body.field("finished_at", t.finishedAt)
                body.key("payload")
                // Stored by Bouncer as jsonb, so it parses; should it not, the export says so rather than failing.
                if let payload = try? JSONParser.parse(Array(t.payloadJSON.utf8)) { body.json(payload) } else { body.null() }
            }
            body.objects("notifications", facts.notifications) { n, body in
                body.field("notification_uuid", n.notificationUUID.lowercasedText)
                body.field("type", n.type)
                body.field("subtype", n.subtype)
                body.field("original_transaction_id", n.originalTransactionId)
                body.field("received_at", n.receivedAt)
            }
            body.objects("ownership_events", facts.ownershipEvents) { e, body in
                body.field("original_transaction_id", e.originalTransactionId)
                body.field("from_user_id", e.fromUserId)
                body.field("to_user_id", e.toUserId)
                body.field("policy", e.policy)
                body.field("at", e.at)
            }
            body.array("grants", facts.grants) { grant, body in writeGrant(grant, at: now, into: &body) }
            body.objects("app_transactions", facts.appTransactions) { record, body in
                record.appTransaction.writeFacts(into: &body)
                body.field("consent_rescinded_at", record.appTransaction.consentRescindedAt)
                body.field("first_seen_at", record.firstSeenAt)
            }
            body.key("timeline")
            writeTimeline(timeline, into: &body)
        }
        return body.bytes
    }
}

/// The customer routes' JSON shapes, for the `bouncer user` CLI to print exactly what the API returns.
extension Representations {
    /// A grant as `POST …/users/:userId/grants` returns it, `active` at `now`.
    public static func grant(_ grant: Grant, at now: Date) -> [UInt8] {
        var body = JSONBody(capacity: 320)
        CustomersController.writeGrant(grant, at: now, into: &body)
        return body.bytes
    }

    /// A timeline as `GET …/users/:userId/timeline` returns it.
    public static func timeline(_ timeline: CustomerTimeline) -> [UInt8] {
        var body = JSONBody(capacity: 256 + 256 * timeline.events.count)
        CustomersController.writeTimeline(timeline, into: &body)
        return body.bytes
    }

    /// An export as `GET …/users/:userId/export` returns it.
    public static func export(_ facts: CustomerFacts, timeline: CustomerTimeline, at now: Date) -> [UInt8] {
        CustomersController.exportBody(facts, timeline: timeline, at: now)
    }

    /// An erasure's answer as `DELETE …/users/:userId` returns it.
    public static func erasure(userId: String, _ summary: ErasureSummary) -> [UInt8] {
        CustomersController.erasureBody(userId: userId, summary)
    }
}

/// How the admin API reads an instant in a body or query (RFC 3339, fractional seconds optional), for the CLI to
/// read its options the same way.
public enum AdminTimestamp {
    /// The instant `text` names; nil when it is not one.
    public static func parse(_ text: String) -> Date? { CustomersController.parseTimestamp(text) }
}
