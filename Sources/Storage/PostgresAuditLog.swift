public import Domain
public import Foundation
import JSON
import Postgres

/// The audit log in PostgreSQL (schema/0053): reads, failed sign-ins' appends, and the retention deletes.
public final class PostgresAuditLog: PostgresStore, @unchecked Sendable, AuditLogStore {
    private static let columns = """
        id, at, actor_type, actor_id, actor_label, action, account_id, project_id, target, changes::text AS changes,
        request_id, client_address
        """

    public func append(_ entry: AuditEntry) throws {
        try StorageErrors.mapping("append audit entry") {
            try pool.withConnection { connection in try AuditRows.insert(entry, connection) }
        }
    }

    public func entries(_ query: AuditQuery) throws -> [AuditEntry] {
        try StorageErrors.mapping("audit log") {
            try pool.withConnection { connection in
                // One statement: each filter is either unset (NULL) or applied; the keyset is `(at, id)` descending.
                try connection.query("""
                    SELECT \(unsafeSQL: Self.columns) FROM audit_log
                    WHERE (\(Bind.uuid(query.accountId)) IS NULL OR account_id = \(Bind.uuid(query.accountId)))
                      AND (\(Bind.uuid(query.projectId)) IS NULL OR project_id = \(Bind.uuid(query.projectId)))
                      AND (\(Bind.text(query.actor))::text IS NULL
                           OR actor_label = \(Bind.text(query.actor))::text OR actor_type = \(Bind.text(query.actor))::text)
                      AND (\(Bind.text(query.action))::text IS NULL OR action = \(Bind.text(query.action))::text)
                      AND (\(Bind.date(query.from)) IS NULL OR at >= \(Bind.date(query.from)))
                      AND (\(Bind.date(query.to)) IS NULL OR at < \(Bind.date(query.to)))
                      AND (\(Bind.date(query.after?.at)) IS NULL
                           OR (at, id) < (\(Bind.date(query.after?.at)), \(Bind.uuid(query.after?.id))))
                    ORDER BY at DESC, id DESC
                    LIMIT \(query.limit)
                    """).map(Self.entry(from:))
            }
        }
    }

    public func deleteEntries(before cutoff: Date, limit: Int) throws -> Int {
        try StorageErrors.mapping("prune audit log") {
            try pool.withConnection { connection in
                try connection.execute("""
                    DELETE FROM audit_log WHERE id IN (
                        SELECT id FROM audit_log WHERE at < \(cutoff) ORDER BY at, id LIMIT \(limit))
                    """)
            }
        }
    }

    static func entry(from row: Row) throws -> AuditEntry {
        let changesText = try row.decode("changes", as: String.self)
        var changes: [AuditChange] = []
        if case .object(let object)? = try? JSONParser.parse(changesText) {
            for (field, pair) in object {
                let values = pair.arrayValue ?? []
                changes.append(AuditChange(field, AuditRows.value(values.first ?? .null),
                                           AuditRows.value(values.count > 1 ? values[1] : .null)))
            }
        }
        return AuditEntry(
            id: try row.decode("id", as: UUID.self), at: try row.decode("at", as: Date.self),
            actor: AuditActor(type: try row.decode("actor_type", as: String.self),
                              id: try row.decode("actor_id", as: UUID?.self),
                              label: try row.decode("actor_label", as: String.self)),
            action: try row.decode("action", as: String.self),
            accountId: try row.decode("account_id", as: UUID?.self),
            projectId: try row.decode("project_id", as: UUID?.self),
            target: try row.decode("target", as: String.self), changes: changes,
            requestId: try row.decode("request_id", as: String.self),
            clientAddress: try row.decode("client_address", as: String.self))
    }
}

/// The one way an audit row is written. A store method that makes an admin change calls `write` inside its
/// transaction, after the change: when an admin request is being served (`AuditContext.current`, set by the API's
/// gate), the request's entry joins the change's transaction, so both commit or neither does. Every write of a
/// request inserts the same entry id, and only the first to commit stays (a retried or second transaction adds none).
/// Outside a request (the CLI, jobs, tests of the store) it writes nothing.
enum AuditRows {
    /// Writes the current request's entry in `connection`'s transaction; `accountId`, `projectId` and `target`
    /// refine the route's when the store knows them (a new project's id, the account of a deleted project).
    static func write(_ connection: Connection, accountId: UUID? = nil, projectId: UUID? = nil, target: String? = nil,
                      changes: [AuditChange]) throws {
        guard let context = AuditContext.current else { return }
        let entry = context.claimEntry(accountId: accountId, projectId: projectId, target: target, changes: changes)
        try insert(entry, connection)
    }

    /// Inserts `entry`; an entry of that id already committed stays as it was.
    static func insert(_ entry: AuditEntry, _ connection: Connection) throws {
        try connection.execute("""
            INSERT INTO audit_log (id, at, actor_type, actor_id, actor_label, action, account_id, project_id, target,
                changes, request_id, client_address)
            VALUES (\(entry.id), \(entry.at), \(entry.actor.type), \(Bind.uuid(entry.actor.id)), \(entry.actor.label),
                \(entry.action), \(Bind.uuid(entry.accountId)), \(Bind.uuid(entry.projectId)), \(entry.target),
                \(changesJSON(entry.changes))::jsonb, \(entry.requestId), \(entry.clientAddress))
            ON CONFLICT (id) DO NOTHING
            """)
    }

    /// The fields that differ between `before` and `after` (nil: created or deleted), in `after`'s (or `before`'s)
    /// order.
    static func diff(_ before: [(String, AuditValue)]?, _ after: [(String, AuditValue)]?) -> [AuditChange] {
        let old = Dictionary((before ?? []).map { ($0.0, $0.1) }, uniquingKeysWith: { a, _ in a })
        let new = Dictionary((after ?? []).map { ($0.0, $0.1) }, uniquingKeysWith: { a, _ in a })
        return (after ?? before ?? []).compactMap { field, _ in
            let b = old[field] ?? .null
            let a = new[field] ?? .null
            return a == b ? nil : AuditChange(field, b, a)
        }
    }

    /// A project's settings as the audit log shows them (never its keys: a rotation records only which kinds).
    static func fields(_ project: Project) -> [(String, AuditValue)] {
        [
            ("account_id", .id(project.accountId)), ("name", .string(project.name)),
            ("bundle_id", .string(project.bundleId)),
            ("app_apple_id", project.appAppleId.flatMap { Int(exactly: $0) }.map { .int($0) } ?? .null),
            ("environments", .list(project.environments.map { .string($0.rawValue) })),
            ("transfer_policy", .string(project.transferPolicy.rawValue)), ("allow_xcode", .bool(project.allowXcode)),
            ("require_secret_key_for_reads", .bool(project.requireSecretKeyForReads)),
            ("app_account_token_policy", .string(project.appAccountTokenPolicy.rawValue)),
            ("entitlement_tokens", .bool(project.entitlementTokens)),
            ("entitlement_token_ttl_seconds", .int(project.entitlementTokenTTLSeconds)),
            ("consumption_response", .string(project.consumption.response.rawValue)),
            ("sandbox_access", .string(project.sandbox.access.rawValue)),
            ("sandbox_allowed_user_ids", .list(project.sandbox.allowedUserIds.map { .string($0) })),
            ("finish_transactions", .bool(project.finishTransactions)),
        ]
    }

    /// `{field: [before, after]}` as JSON text.
    static func changesJSON(_ changes: [AuditChange]) -> String {
        JSONValue.object(JSONObject(changes.map { ($0.field, JSONValue.array([json($0.before), json($0.after)])) }))
            .serializedString()
    }

    static func json(_ value: AuditValue) -> JSONValue {
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return JSONValue(i)
        case .string(let s): return .string(s)
        case .list(let items): return .array(items.map(json))
        }
    }

    static func value(_ json: JSONValue) -> AuditValue {
        switch json {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .string(let s): return .string(s)
        case .array(let items): return .list(items.map(value))
        case .number(let n): return n.int64Value.flatMap { Int(exactly: $0) }.map { .int($0) } ?? .string(n.literal)
        case .object(let o): return .string(JSONValue.object(o).serializedString())
        }
    }
}
