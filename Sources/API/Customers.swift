import Domain
import Foundation
import HTTPCore
import JSON

/// `/v1/admin/projects/:id/users/:userId/…`: manual grants, the customer timeline, export and erase, and the search
/// by transaction id. Each accepts the admin token or the project's secret key (`Access.adminOrSecretKey`).
struct CustomersController: APIController {
    let projects: any ProjectStore
    /// The support use cases, at this server's clock.
    let support: CustomerSupport
    let now: @Sendable () -> Date

    var routes: [APIRoute] {
        // A project's users: the admin token or the project's secret key (a customer's backend); both share the
        // admin bucket (these are support tools, not a hot path).
        let user = "/v1/admin/projects/:id/users/:userId"
        return [
            APIRoute(.post, user + "/grants", .adminAPI, access: .adminOrSecretKey, createGrant),
            APIRoute(.delete, user + "/grants/:grantId", .adminAPI, access: .adminOrSecretKey, deleteGrant),
            APIRoute(.get, user + "/timeline", .adminAPI, access: .adminOrSecretKey, getTimeline),
            APIRoute(.get, user + "/export", .adminAPI, access: .adminOrSecretKey, exportUser),
            APIRoute(.delete, user, .adminAPI, access: .adminOrSecretKey, eraseUser),
            APIRoute(.get, "/v1/admin/projects/:id/transactions/:transactionId", .adminAPI, access: .adminOrSecretKey,
                     getTransactionHolders),
        ]
    }

    static let grantSuggestion = "Request body requires entitlement (1 to 128 characters) and reason (1 to 500 "
        + "characters); optional expires_at (ISO 8601, in the future; omit for no end), e.g. "
        + "{\"entitlement\": \"pro\", \"reason\": \"support ticket 42\", \"expires_at\": \"2027-01-01T00:00:00Z\"}."
    static let userIdSuggestion = "Put the user id (1 to 256 characters) in the URL path."
    static let grantIdSuggestion = "Use the grant's id (a UUID) from the grant's 201 answer or the user's export."

    /// `POST /v1/admin/projects/:id/users/:userId/grants` → 201 with the grant.
    func createGrant(_ request: Request) throws -> Response {
        let (projectId, userId) = try authorizedUser(request)
        let body = try RequestBody.object(request, suggestion: Self.grantSuggestion)
        var fields = FieldValidator(body)
        let entitlement = fields.string("entitlement", required: true, minLength: 0)
        let reason = fields.string("reason", required: true, minLength: 0)
        var expiresAt: Date?
        if let value = body["expires_at"], !value.isNull {
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
        guard let raw = request.pathParameters["grantId"], let grantId = UUID(uuidString: raw) else {
            throw HTTPError.validation([ErrorDetail(path: ["grantId"], message: "Invalid uuid")],
                                      suggestion: Self.grantIdSuggestion)
        }
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
    func eraseUser(_ request: Request) throws -> Response {
        let (projectId, userId) = try authorizedUser(request)
        let summary = try support.erase(projectId: projectId, userId: userId)
        return Response.json(200, Self.erasureBody(userId: userId, summary))
    }

    /// `GET /v1/admin/projects/:id/transactions/:transactionId`: the recorded transaction and the users currently
    /// bound to its purchase (support's search by transaction id).
    func getTransactionHolders(_ request: Request) throws -> Response {
        let projectId = try PathParameters.projectId(request)
        let found = try support.holders(projectId: projectId, transactionId: request.pathParameters["transactionId"] ?? "")
        return Response.json(200, Self.holdersBody(found))
    }

    // MARK: - Parsing

    /// The project id and user id of the path (the caller is authorized for that project: `Access.adminOrSecretKey`);
    /// the user id in the form the project stores it (`AccountBindingRules.canonicalUserId`).
    private func authorizedUser(_ request: Request) throws -> (UUID, String) {
        let projectId = try PathParameters.projectId(request)
        let userId = request.pathParameters["userId"] ?? ""
        let problems = GrantRules.problems(userId: userId)
        guard problems.isEmpty else {
            throw HTTPError.validation(problems.map { ErrorDetail(path: $0.path, message: $0.message) },
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
        out.raw(#"{"transaction_id":"#)
        out.string(found.transactionId)
        out.raw(#","original_transaction_id":"#)
        out.string(found.originalTransactionId)
        out.raw(#","product_id":"#)
        out.string(found.productId)
        out.raw(#","environment":"#)
        out.string(found.environment.rawValue)
        out.raw(#","source":"#)
        out.string(found.source)
        out.raw(#","user_ids":"#)
        out.strings(found.userIds)
        out.raw("}")
        return out.bytes
    }

    static func erasureBody(userId: String, _ summary: ErasureSummary) -> [UInt8] {
        var out = JSONBody(capacity: 320)
        out.raw(#"{"user_id":"#)
        out.string(userId)
        out.raw(#","erased":true,"bindings_deleted":"#)
        out.int(Int64(summary.bindingsDeleted))
        out.raw(#","grants_anonymised":"#)
        out.int(Int64(summary.grantsAnonymised))
        out.raw(#","app_transactions_unbound":"#)
        out.int(Int64(summary.appTransactionsUnbound))
        out.raw(#","ownership_events_anonymised":"#)
        out.int(Int64(summary.ownershipEventsAnonymised))
        out.raw(#","app_account_tokens_cleared":"#)
        out.int(Int64(summary.appAccountTokensCleared))
        out.raw(#","events_dropped":"#)
        out.int(Int64(summary.eventsDropped))
        out.raw(#","events_anonymised":"#)
        out.int(Int64(summary.eventsAnonymised))
        out.raw("}")
        return out.bytes
    }

    static func writeGrant(_ grant: Grant, at now: Date, into body: inout JSONBody) {
        body.raw(#"{"id":"#)
        body.string(grant.id.uuidString.lowercased())
        body.raw(#","source":"grant","user_id":"#)
        body.stringOrNull(grant.userId)
        body.raw(#","entitlement":"#)
        body.string(grant.entitlement)
        body.raw(#","expires_at":"#)
        body.dateOrNull(grant.expiresAt)
        body.raw(#","reason":"#)
        body.string(grant.reason)
        body.raw(#","created_at":"#)
        body.date(grant.createdAt)
        body.raw(#","revoked_at":"#)
        body.dateOrNull(grant.revokedAt)
        body.raw(#","active":"#)
        body.bool(grant.isActive(at: now))
        body.raw("}")
    }

    static func writeTimeline(_ timeline: CustomerTimeline, into body: inout JSONBody) {
        body.raw(#"{"user_id":"#)
        body.string(timeline.userId)
        body.raw(#","entitlements":["#)
        for (i, e) in timeline.entitlements.enumerated() {
            if i > 0 { body.raw(",") }
            body.raw(#"{"id":"#)
            body.string(e.id)
            body.raw(#","active":"#)
            body.bool(e.active)
            body.raw(#","reason":"#)
            body.string(e.reason)
            body.raw("}")
        }
        body.raw(#"],"events":["#)
        for (i, e) in timeline.events.enumerated() {
            if i > 0 { body.raw(",") }
            body.raw(#"{"at":"#)
            body.date(e.at)
            body.raw(#","source":"#)
            body.string(e.source)
            body.raw(#","type":"#)
            body.string(e.type)
            body.raw(#","transaction_id":"#)
            body.stringOrNull(e.transactionId)
            body.raw(#","summary":"#)
            body.string(e.summary)
            body.raw(#","effect":"#)
            body.string(e.effect)
            body.raw("}")
        }
        body.raw("]}")
    }

    static func exportBody(_ facts: CustomerFacts, timeline: CustomerTimeline, at now: Date) -> [UInt8] {
        var body = JSONBody(capacity: 1024 + 1024 * facts.transactions.count)
        body.raw(#"{"user_id":"#)
        body.string(facts.userId)
        body.raw(#","exported_at":"#)
        body.date(now)
        body.raw(#","bindings":["#)
        for (i, held) in facts.purchases.enumerated() {
            if i > 0 { body.raw(",") }
            body.raw(#"{"original_transaction_id":"#)
            body.string(held.purchase.originalTransactionId)
            body.raw(#","environment":"#)
            body.string(held.purchase.environment.rawValue)
            body.raw(#","product_id":"#)
            body.string(held.purchase.productId)
            body.raw(#","device_id":"#)
            body.stringOrNull(held.deviceId)
            body.raw(#","bound_at":"#)
            body.date(held.boundAt)
            body.raw(#","revoked_at":"#)
            body.dateOrNull(held.revokedAt)
            body.raw("}")
        }
        var devices: [String] = []
        for device in facts.purchases.compactMap(\.deviceId) where !devices.contains(device) { devices.append(device) }
        body.raw(#"],"device_ids":"#)
        body.strings(devices)
        body.raw(#","transactions":["#)
        for (i, t) in facts.transactions.enumerated() {
            if i > 0 { body.raw(",") }
            body.raw(#"{"transaction_id":"#)
            body.string(t.transactionId)
            body.raw(#","original_transaction_id":"#)
            body.string(t.originalTransactionId)
            body.raw(#","environment":"#)
            body.string(t.environment.rawValue)
            body.raw(#","product_id":"#)
            body.string(t.productId)
            body.raw(#","purchase_date":"#)
            body.date(t.purchaseDate)
            body.raw(#","expires_date":"#)
            body.dateOrNull(t.expiresDate)
            body.raw(#","revocation_date":"#)
            body.dateOrNull(t.revocationDate)
            body.raw(#","source":"#)
            body.stringOrNull(t.source)
            body.raw(#","first_seen_at":"#)
            body.date(t.firstSeenAt)
            body.raw(#","payload":"#)
            // Stored by Bouncer as jsonb, so it parses; should it not, the export says so rather than failing.
            if let payload = try? JSONParser.parse(Array(t.payloadJSON.utf8)) { body.json(payload) } else { body.raw("null") }
            body.raw("}")
        }
        body.raw(#"],"notifications":["#)
        for (i, n) in facts.notifications.enumerated() {
            if i > 0 { body.raw(",") }
            body.raw(#"{"notification_uuid":"#)
            body.string(n.notificationUUID.uuidString.lowercased())
            body.raw(#","type":"#)
            body.string(n.type)
            body.raw(#","subtype":"#)
            body.stringOrNull(n.subtype)
            body.raw(#","original_transaction_id":"#)
            body.string(n.originalTransactionId)
            body.raw(#","received_at":"#)
            body.date(n.receivedAt)
            body.raw("}")
        }
        body.raw(#"],"ownership_events":["#)
        for (i, e) in facts.ownershipEvents.enumerated() {
            if i > 0 { body.raw(",") }
            body.raw(#"{"original_transaction_id":"#)
            body.string(e.originalTransactionId)
            body.raw(#","from_user_id":"#)
            body.stringOrNull(e.fromUserId)
            body.raw(#","to_user_id":"#)
            body.stringOrNull(e.toUserId)
            body.raw(#","policy":"#)
            body.string(e.policy)
            body.raw(#","at":"#)
            body.date(e.at)
            body.raw("}")
        }
        body.raw(#"],"grants":["#)
        for (i, grant) in facts.grants.enumerated() {
            if i > 0 { body.raw(",") }
            writeGrant(grant, at: now, into: &body)
        }
        body.raw(#"],"app_transactions":["#)
        for (i, record) in facts.appTransactions.enumerated() {
            if i > 0 { body.raw(",") }
            let app = record.appTransaction
            body.raw(#"{"app_transaction_id":"#)
            body.string(app.appTransactionId)
            body.raw(#","environment":"#)
            body.string(app.environment.rawValue)
            body.raw(#","original_application_version":"#)
            body.stringOrNull(app.originalApplicationVersion)
            body.raw(#","original_purchase_date":"#)
            body.dateOrNull(app.originalPurchaseDate)
            body.raw(#","consent_rescinded_at":"#)
            body.dateOrNull(app.consentRescindedAt)
            body.raw(#","first_seen_at":"#)
            body.date(record.firstSeenAt)
            body.raw("}")
        }
        body.raw(#"],"timeline":"#)
        writeTimeline(timeline, into: &body)
        body.raw("}")
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
