public import Domain
public import Foundation
import HTTPCore
import Primitives

/// What each changing admin route is, in the audit log: its `action` and the kind of its `target`. Every admin route
/// whose method is not GET has one (`AuditLogTests` checks it), so a new route cannot change anything unaudited.
public enum AuditActions {
    /// `(method, pattern)` → `(action, target kind, the path parameter naming the target)`; a creation names no
    /// parameter (its store names the new id). A customer's routes never name the user (`user`, `grant:<id>`): an
    /// erase leaves no trace of the user id, in the audit log either.
    static let table: [String: (action: String, target: String, parameter: String?)] = {
        let project = "/v1/admin/projects/:id"
        let account = "/v1/admin/accounts/:id"
        let user = project + "/users/:userId"
        let entries: [(HTTPMethod, String, String, String, String?)] = [
            (.post, "/v1/admin/accounts", "account.create", "account", nil),
            (.patch, account, "account.update", "account", "id"),
            (.delete, account, "account.delete", "account", "id"),
            (.post, account + "/api-keys", "api_key.create", "api_key", nil),
            (.delete, account + "/api-keys/:keyId", "api_key.revoke", "api_key", "keyId"),
            (.post, account + "/members", "member.invite", "member", nil),
            (.patch, account + "/members/:memberId", "member.update", "member", "memberId"),
            (.delete, account + "/members/:memberId", "member.remove", "member", "memberId"),
            (.post, account + "/members/:memberId/totp", "member.enable_totp", "member", "memberId"),
            (.put, account + "/quotas", "account.set_quotas", "account", "id"),
            (.post, "/v1/admin/projects", "project.create", "project", nil),
            (.patch, project, "project.update", "project", "id"),
            (.delete, project, "project.delete", "project", "id"),
            (.post, project + "/rotate-keys", "project.rotate_keys", "project", "id"),
            (.post, project + "/reconcile", "project.reconcile", "project", "id"),
            (.put, project + "/products/:productId", "product.put", "product", "productId"),
            (.delete, project + "/products/:productId", "product.delete", "product", "productId"),
            (.put, project + "/app-store-credentials", "credentials.put", "credentials", "id"),
            (.delete, project + "/app-store-credentials", "credentials.delete", "credentials", "id"),
            (.post, project + "/app-store/test-notification", "app_store.test_notification", "project", "id"),
            (.post, project + "/subscriptions/:originalTransactionId/extend", "subscription.extend", "subscription",
             "originalTransactionId"),
            (.put, project + "/purchases/:originalTransactionId/app-account-token", "purchase.set_app_account_token",
             "purchase", "originalTransactionId"),
            (.post, project + "/products/:productId/extend", "product.extend_renewals", "product", "productId"),
            (.post, user + "/grants", "grant.create", "user", nil),
            (.delete, user + "/grants/:grantId", "grant.delete", "grant", "grantId"),
            (.delete, user, "customer.erase", "user", nil),
            (.put, project + "/webhook", "webhook.put", "webhook", "id"),
            (.delete, project + "/webhook", "webhook.delete", "webhook", "id"),
            (.post, project + "/webhook/rotate-secret", "webhook.rotate_secret", "webhook", "id"),
            (.post, project + "/webhook/test", "webhook.test", "webhook", "id"),
            (.post, project + "/webhook/deliveries/:eventId/retry", "webhook.retry_delivery", "webhook_event", "eventId"),
            (.delete, "/v1/admin/sessions", "sessions.sign_out_everywhere", "sessions", nil),
            (.put, project + "/revenue-settings", "revenue_settings.update", "project", "id"),
            (.put, "/v1/admin/exchange-rates", "exchange_rates.update", "exchange_rates", nil),
            (.put, "/v1/admin/tax-rates", "tax_rates.update", "tax_rates", nil),
            (.put, project + "/retention/rules", "retention.put_rules", "project", "id"),
            (.put, project + "/retention/messages/:messageId", "retention.upload_message", "retention_message",
             "messageId"),
            (.delete, project + "/retention/messages/:messageId", "retention.delete_message", "retention_message",
             "messageId"),
            (.put, project + "/retention/images/:imageId", "retention.upload_image", "retention_image", "imageId"),
            (.delete, project + "/retention/images/:imageId", "retention.delete_image", "retention_image", "imageId"),
            (.put, project + "/retention/default-messages/:productId/:locale", "retention.set_default_message",
             "product", "productId"),
            (.delete, project + "/retention/default-messages/:productId/:locale", "retention.delete_default_message",
             "product", "productId"),
            (.put, project + "/retention/realtime-url", "retention.set_realtime_url", "project", "id"),
            (.post, project + "/retention/performance-test", "retention.performance_test", "project", "id"),
        ]
        var table: [String: (action: String, target: String, parameter: String?)] = [:]
        for (method, pattern, action, target, parameter) in entries {
            table[key(method, pattern)] = (action, target, parameter)
        }
        return table
    }()

    /// A failed admin token, API key or console sign-in.
    static let signInFailed = "session.sign_in_failed"

    static func key(_ method: HTTPMethod, _ pattern: String) -> String { method.rawValue + " " + pattern }

    /// The entry's target: the kind, and the id the route's path names (`project:<id>`), if it names one.
    static func target(_ declared: (action: String, target: String, parameter: String?),
                       _ parameters: [String: String]) -> String {
        declared.parameter.flatMap { parameters[$0] }.map { declared.target + ":" + $0 } ?? declared.target
    }

    /// The context of a change made outside HTTP that is the change of the admin route `method pattern` (the CLI's
    /// `bouncer account create` is `POST /v1/admin/accounts`): the route's action and target, so each action has
    /// one name whoever makes it. `parameters` are the route's path parameters. A route without an action is a
    /// programming error.
    public static func context(_ method: String, _ pattern: String, parameters: [String: String] = [:],
                               actor: AuditActor, accountId: UUID?, projectId: UUID?, requestId: String,
                               clientAddress: String, now: @escaping @Sendable () -> Date) -> AuditContext {
        guard let declared = table[method + " " + pattern] else {
            preconditionFailure("no audit action for \(method) \(pattern)")
        }
        return AuditContext(actor: actor, action: declared.action, accountId: accountId, projectId: projectId,
                            target: target(declared, parameters), requestId: requestId, clientAddress: clientAddress,
                            now: now)
    }

    /// Whether a route of `method` changes something (and so must be audited).
    static func changes(_ method: HTTPMethod) -> Bool { method != .get && method != .head }

    /// POST routes that change nothing (a simulation): no audit entry.
    static let readOnlyPosts: Set<String> = [key(.post, "/v1/admin/projects/:id/retention/simulate")]
}

/// How many changing admin requests answered 2xx without their store writing the audit entry (a route whose store
/// call forgot `AuditRows.write`): each is a bug, logged as `audit_entry_missing` and exposed as
/// `bouncer_audit_missing_total`. No entry is made up afterwards: an entry is written in its change's transaction
/// or not at all.
public final class AuditGaps: Sendable {
    private let count = Locked(0)

    /// A counter at zero.
    public init() {}

    /// The count so far.
    public var total: Int { count.withLock { $0 } }

    func record() { count.withLock { $0 += 1 } }
}

extension RouteGate {
    /// Runs a changing admin route's handler inside its `AuditContext`, so the store making the change writes the
    /// entry in its own transaction (`AuditRows.write`). A successful answer whose handler reached no such store is
    /// a bug: logged and counted (`AuditGaps`), never patched up with an entry outside the change's transaction.
    func audited(_ route: APIRoute, _ request: Request, actor: AuditActor, principal: Principal?,
                 _ handler: () throws -> Response) throws -> Response {
        guard AuditActions.changes(route.method),
              let declared = AuditActions.table[AuditActions.key(route.method, route.pattern)] else {
            return try handler()
        }
        var accountId = principal?.accountId
        var projectId: UUID?
        switch RouteScope(pattern: route.pattern) {
        case .project:
            projectId = try PathParameters.projectId(request)
            if let project = try projectId.flatMap({ try admin.projects.project(id: $0) }) {
                accountId = project.accountId
            }
        case .account:
            accountId = try PathParameters.accountId(request)
        case .server:
            break
        }
        let target = AuditActions.target(declared, request.pathParameters)
        let context = AuditContext(
            actor: actor, action: declared.action, accountId: accountId, projectId: projectId, target: target,
            requestId: request.requestID, clientAddress: request.clientAddress, now: admin.now)
        let response = try AuditContext.$current.withValue(context) { try handler() }
        if (200..<300).contains(response.status), !context.isClaimed {
            admin.auditGaps.record()
            admin.logLine("{\"event\":\"audit_entry_missing\",\"action\":\"\(declared.action)\","
                + "\"request_id\":\"\(request.requestID)\"}")
        }
        return response
    }
}

extension AdminAuth {
    /// Records a failed sign-in (a wrong admin token, API key or console sign-in): the identity presented, never
    /// what was presented. A failure to record is logged, not answered: the caller's 401 stands.
    func recordFailedSignIn(_ request: Request, actor: AuditActor) {
        guard let log = auditLog else { return }
        let entry = AuditEntry(
            at: AuditEntry.instant(now()), actor: actor, action: AuditActions.signInFailed, accountId: nil,
            projectId: nil, target: "session", changes: [], requestId: request.requestID,
            clientAddress: request.clientAddress)
        do {
            try log.append(entry)
        } catch {
            logLine("{\"event\":\"audit_append_failed\",\"request_id\":\"\(request.requestID)\"}")
        }
    }
}

/// `GET /v1/admin/audit-log`: who changed what, newest first, as JSON pages or CSV.
struct AuditLogController: APIController {
    let log: AuditLog?

    var routes: [APIRoute] {
        [APIRoute(.get, "/v1/admin/audit-log", .adminAPI, access: .admin(.auditRead), listEntries)]
    }

    static let suggestion = "Optional query parameters: account_id and project_id (UUIDs), actor (operator, member, "
        + "api_key, or a label such as api_key:<id>), action (e.g. project.update), from and to (ISO 8601), cursor "
        + "(next_cursor of the previous page), limit (integer 1 to 1000, default 100), format (json or csv)."
    static let defaultLimit = 100

    /// `GET /v1/admin/audit-log?account_id=&project_id=&actor=&action=&from=&to=&cursor=&limit=&format=`.
    func listEntries(_ request: Request, _ principal: Principal) throws -> Response {
        let (query, csv) = try Self.query(request)
        let use = try unwired(log, "The audit log is not configured.", "auditLog")
        var page = query
        page.limit = query.limit + 1
        var entries = try use.entries(page, for: principal)
        var next: String?
        if entries.count > query.limit {
            entries = Array(entries.prefix(query.limit))
            next = entries.last.map(Self.cursor)
        }
        if csv {
            var headers = HTTPHeaders()
            headers.set("Content-Type", "text/csv; charset=utf-8")
            headers.set("Content-Disposition", "attachment; filename=\"audit-log.csv\"")
            if let next { headers.set("Bouncer-Next-Cursor", next) }
            return Response(status: 200, headers: headers, body: Array(Self.csv(entries).utf8))
        }
        var body = JSONBody(capacity: 64 + 400 * entries.count)
        body.object {
            $0.array("entries", entries, Self.writeEntry)
            $0.field("next_cursor", next)
        }
        return Response.json(200, body.bytes)
    }

    /// The query parameters, validated; unknown ones are ignored, a repeated one is the last.
    static func query(_ request: Request) throws(HTTPError) -> (AuditQuery, csv: Bool) {
        var query = AuditQuery(limit: defaultLimit)
        var csv = false
        var details: [ErrorDetail] = []
        func uuid(_ name: String, _ value: String) -> UUID? {
            guard let id = UUID(uuidString: value) else {
                details.append(ErrorDetail(path: [name], message: "Invalid uuid"))
                return nil
            }
            return id
        }
        func date(_ name: String, _ value: String) -> Date? {
            guard let date = CustomersController.parseTimestamp(value) else {
                details.append(ErrorDetail(path: [name], message: "Invalid datetime (ISO 8601, e.g. 2027-01-01T00:00:00Z)"))
                return nil
            }
            return date
        }
        func text(_ name: String, _ value: String) -> String? {
            guard !value.isEmpty, value.utf8.count <= 200, !value.utf8.contains(0) else {
                details.append(ErrorDetail(path: [name], message: "String must contain 1 to 200 characters, no NUL"))
                return nil
            }
            return value
        }
        for item in request.queryItems() {
            switch item.name {
            case "account_id": query.accountId = uuid("account_id", item.value)
            case "project_id": query.projectId = uuid("project_id", item.value)
            case "actor": query.actor = text("actor", item.value)
            case "action": query.action = text("action", item.value)
            case "from": query.from = date("from", item.value)
            case "to": query.to = date("to", item.value)
            case "cursor":
                if let after = decodeCursor(item.value) {
                    query.after = after
                } else {
                    details.append(ErrorDetail(path: ["cursor"], message: "Invalid cursor"))
                }
            case "limit":
                guard item.value.utf8.count <= 4, let value = Int(item.value), value >= 1,
                      value <= AuditLog.maximumLimit else {
                    details.append(ErrorDetail(path: ["limit"], message: "Expected integer 1 to \(AuditLog.maximumLimit)"))
                    continue
                }
                query.limit = value
            case "format":
                csv = csvFormat(item.value, &details) ?? csv
            default:
                continue
            }
        }
        if !details.isEmpty { throw HTTPError.validation(details, suggestion: suggestion) }
        return (query, csv)
    }

    /// `format=`: json (false) or csv (true), else nil and a detail.
    static func csvFormat(_ value: String, _ details: inout [ErrorDetail]) -> Bool? {
        switch value {
        case "json": return false
        case "csv": return true
        default:
            details.append(ErrorDetail(path: ["format"], message: "Expected json or csv"))
            return nil
        }
    }

    /// The opaque cursor after `entry`: base64url of `<milliseconds>.<id>`.
    static func cursor(_ entry: AuditEntry) -> String {
        let ms = RFC3339.milliseconds(secondsSince1970: entry.at.timeIntervalSince1970)
        return Base64.encodeURL(Array("\(ms).\(entry.id.lowercasedText)".utf8))
    }

    static func decodeCursor(_ text: String) -> (at: Date, id: UUID)? {
        guard text.utf8.count <= 128,
              let bytes = Array(text.utf8).withUnsafeBufferPointer({ Base64.decodeURL($0) }),
              let plain = String(validating: bytes, as: UTF8.self) else { return nil }
        let parts = plain.split(separator: ".", maxSplits: 1)
        guard parts.count == 2, parts[0].utf8.count <= 16, let ms = Int64(parts[0]),
              ms >= RFC3339.minMilliseconds, ms <= RFC3339.maxMilliseconds,
              let id = UUID(uuidString: String(parts[1])) else { return nil }
        return (Date(timeIntervalSince1970: Double(ms) / 1000), id)
    }

    /// `{id, at, actor: {type, id, label}, action, account_id, project_id, target, changes: {field: [before, after]},
    /// request_id, client_address}`.
    static func writeEntry(_ entry: AuditEntry, into body: inout JSONBody) {
        body.beginObject()
        body.field("id", entry.id.lowercasedText)
        body.field("at", entry.at)
        body.key("actor")
        body.object {
            $0.field("type", entry.actor.type)
            $0.field("id", entry.actor.id?.lowercasedText)
            $0.field("label", entry.actor.label)
        }
        body.field("action", entry.action)
        body.field("account_id", entry.accountId?.lowercasedText)
        body.field("project_id", entry.projectId?.lowercasedText)
        body.field("target", entry.target)
        body.key("changes")
        writeChanges(entry.changes, into: &body)
        body.field("request_id", entry.requestId)
        body.field("client_address", entry.clientAddress)
        body.endObject()
    }

    /// `{field: [before, after], …}`.
    static func writeChanges(_ changes: [AuditChange], into body: inout JSONBody) {
        body.object {
            for change in changes {
                $0.key(named: change.field)
                $0.beginArray()
                writeValue(change.before, into: &$0)
                writeValue(change.after, into: &$0)
                $0.endArray()
            }
        }
    }

    static func writeValue(_ value: AuditValue, into body: inout JSONBody) {
        switch value {
        case .null: body.null()
        case .bool(let b): body.bool(b)
        case .int(let i): body.int(Int64(i))
        case .string(let s): body.string(s)
        case .list(let items):
            body.beginArray()
            for item in items { writeValue(item, into: &body) }
            body.endArray()
        }
    }

    /// The CSV's columns, in order.
    static let csvColumns = ["id", "at", "actor_type", "actor_id", "actor_label", "action", "account_id",
                             "project_id", "target", "changes", "request_id", "client_address"]

    /// RFC 4180 (CRLF, every field quoted when it holds a comma, quote, CR or LF; quotes doubled), and safe to open
    /// in a spreadsheet: a cell starting with `=`, `+`, `-`, `@`, tab or CR is prefixed with `'`.
    static func csv(_ entries: [AuditEntry]) -> String {
        var out = csvColumns.joined(separator: ",") + "\r\n"
        for entry in entries {
            var changes = JSONBody(capacity: 128)
            writeChanges(entry.changes, into: &changes)
            let cells = [
                entry.id.lowercasedText,
                RFC3339.string(secondsSince1970: entry.at.timeIntervalSince1970),
                entry.actor.type, entry.actor.id?.lowercasedText ?? "", entry.actor.label, entry.action,
                entry.accountId?.lowercasedText ?? "", entry.projectId?.lowercasedText ?? "",
                entry.target, String(decoding: changes.bytes, as: UTF8.self), entry.requestId, entry.clientAddress,
            ]
            out += cells.map(csvCell).joined(separator: ",") + "\r\n"
        }
        return out
    }

    static func csvCell(_ text: String) -> String {
        var cell = text
        if let first = cell.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) { cell = "'" + cell }
        guard cell.unicodeScalars.contains(where: { ",\"\r\n".unicodeScalars.contains($0) }) else { return cell }
        return "\"" + cell.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
