public import Foundation
import Primitives

/// Who made an audited change: `{type, id, label}` in the audit log.
public struct AuditActor: Sendable, Equatable {
    /// `operator`, `member`, `api_key` (`Principal.kind`), or `secret_key` (a project's backend on the customer
    /// routes it may call).
    public var type: String
    /// The member's or key's id (the project's, for a secret key); nil for the operator and an unknown identity.
    public var id: UUID?
    /// `Principal.label`, or `secret_key:<project id>`.
    public var label: String

    /// Creates a value.
    public init(type: String, id: UUID?, label: String) {
        self.type = type
        self.id = id
        self.label = label
    }

    /// The actor of `principal`.
    public init(_ principal: Principal) {
        switch principal {
        case .operator: self.init(type: principal.kind, id: nil, label: principal.label)
        case .member(let id, _, _), .apiKey(let id, _, _, _): self.init(type: principal.kind, id: id, label: principal.label)
        }
    }

    /// A project's secret key (`sk_…`) on the customer routes (`Access.adminOrSecretKey`).
    public static func secretKey(projectId: UUID) -> AuditActor {
        AuditActor(type: "secret_key", id: projectId, label: "secret_key:" + projectId.lowercasedText)
    }
}

/// A value in an entry's `changes` (`{field: [before, after]}`): what JSON can say of a setting, never a secret
/// (`AuditRedaction`).
public indirect enum AuditValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case string(String)
    case list([AuditValue])

    /// `.string(text)`, or `.null` for nil.
    public static func text(_ text: String?) -> AuditValue { text.map { .string($0) } ?? .null }

    /// A date as RFC 3339 text, or `.null`.
    public static func date(_ date: Date?) -> AuditValue {
        date.map { .string(RFC3339.string(secondsSince1970: $0.timeIntervalSince1970)) } ?? .null
    }

    /// An id as lowercase text, or `.null`.
    public static func id(_ id: UUID?) -> AuditValue { id.map { .string($0.lowercasedText) } ?? .null }
}

/// One field's change: `[before, after]` (`.null` before a creation and after a deletion).
public struct AuditChange: Sendable, Equatable {
    public var field: String
    public var before: AuditValue
    public var after: AuditValue

    /// Creates a value.
    public init(_ field: String, _ before: AuditValue, _ after: AuditValue) {
        self.field = field
        self.before = before
        self.after = after
    }
}

/// The one place that says what never reaches the audit log: a field named like a secret keeps only the fact that
/// it changed (`"[redacted]"`), whatever its value.
public enum AuditRedaction {
    /// What a secret field's value reads as.
    public static let placeholder = AuditValue.string("[redacted]")

    /// Whether a field of that name holds a secret (keys, passwords, credentials, webhook secrets, private keys,
    /// tokens, TOTP secrets).
    public static func isSecret(_ field: String) -> Bool {
        let name = field.lowercased()
        return ["secret", "password", "private_key", "token", "credential", "totp", "key_hash", "api_key"]
            .contains { name.contains($0) } || name == "key" || name.hasSuffix("_key")
    }

    /// `changes` with every secret field's values replaced by the placeholder (`.null` stays `.null`).
    public static func redacted(_ changes: [AuditChange]) -> [AuditChange] {
        changes.map { change in
            guard isSecret(change.field) else { return change }
            return AuditChange(change.field, change.before == .null ? .null : placeholder,
                               change.after == .null ? .null : placeholder)
        }
    }
}

/// One entry of the audit log: `{id, at, actor, action, account_id, project_id, target, changes, request_id,
/// client_address}`.
public struct AuditEntry: Sendable, Equatable {
    public var id: UUID
    public var at: Date
    public var actor: AuditActor
    /// `project.update`, `api_key.create`, `session.sign_in_failed`… (`AuditActions`, Sources/API).
    public var action: String
    /// The account the change belongs to; nil for the server's own (sessions) and unknown identities.
    public var accountId: UUID?
    public var projectId: UUID?
    /// What was changed, as the route names it (`project:<id>`, `product:<id>`, `api_key:<id>`…).
    public var target: String
    /// Field by field, secrets redacted.
    public var changes: [AuditChange]
    /// The server's request id (`X-Request-Id`).
    public var requestId: String
    /// The client's address as the server resolved it (trusted proxies applied).
    public var clientAddress: String

    /// Creates a value; `changes` are redacted here, so no entry can hold a secret.
    public init(id: UUID = UUID(), at: Date, actor: AuditActor, action: String, accountId: UUID?, projectId: UUID?,
                target: String, changes: [AuditChange], requestId: String, clientAddress: String) {
        self.id = id
        self.at = at
        self.actor = actor
        self.action = action
        self.accountId = accountId
        self.projectId = projectId
        self.target = target
        self.changes = AuditRedaction.redacted(changes)
        self.requestId = requestId
        self.clientAddress = clientAddress
    }

    /// `date` to whole milliseconds: what the log stores, so a cursor names an entry's `at` exactly.
    public static func instant(_ date: Date) -> Date {
        Date(timeIntervalSince1970: Double(RFC3339.milliseconds(secondsSince1970: date.timeIntervalSince1970)) / 1000)
    }
}

/// The audit seam: the admin request being served, set by the API's gate around a changing admin route's handler
/// (`AuditContext.$current.withValue`). A store method that makes an admin change calls `AuditRows.write` inside its
/// transaction, which turns this context (plus the store's target and changes) into the one entry of the request, in
/// the same transaction. Every changing admin route reaches such a store call when it succeeds; a 2xx answer that
/// reached none is a bug the gate logs and counts (`audit_missing_total`).
public final class AuditContext: Sendable {
    /// The request in progress on this thread, if it is an audited admin change.
    @TaskLocal public static var current: AuditContext?

    public let actor: AuditActor
    public let action: String
    public let accountId: UUID?
    public let projectId: UUID?
    /// The target the route names when the store names none.
    public let target: String
    public let requestId: String
    public let clientAddress: String
    public let now: @Sendable () -> Date
    private let written = Locked(false)

    /// Creates a value.
    public init(actor: AuditActor, action: String, accountId: UUID?, projectId: UUID?, target: String,
                requestId: String, clientAddress: String, now: @escaping @Sendable () -> Date) {
        self.actor = actor
        self.action = action
        self.accountId = accountId
        self.projectId = projectId
        self.target = target
        self.requestId = requestId
        self.clientAddress = clientAddress
        self.now = now
    }

    /// The one id of the request's entry: every store call writing it inserts this id (`ON CONFLICT DO NOTHING`), so
    /// the first transaction to commit one keeps it, and a transaction that rolled back (and was retried, or was
    /// followed by another store call) left nothing behind to block the next.
    public let entryId = UUID()

    /// The request's entry with the store's target and changes, for a store to insert inside its transaction.
    /// `accountId`, `projectId` and `target` override the route's when the store knows better (a created project's
    /// id and account).
    public func claimEntry(accountId: UUID? = nil, projectId: UUID? = nil, target: String? = nil,
                           changes: [AuditChange]) -> AuditEntry {
        written.withLock { $0 = true }
        return entry(accountId: accountId, projectId: projectId, target: target, changes: changes)
    }

    /// Whether a store wrote (or tried to write) the entry.
    public var isClaimed: Bool { written.withLock { $0 } }

    /// The entry with this context's fields.
    public func entry(accountId: UUID? = nil, projectId: UUID? = nil, target: String? = nil,
                      changes: [AuditChange] = []) -> AuditEntry {
        AuditEntry(id: entryId, at: AuditEntry.instant(now()), actor: actor, action: action,
                   accountId: accountId ?? self.accountId, projectId: projectId ?? self.projectId,
                   target: target ?? self.target, changes: changes, requestId: requestId, clientAddress: clientAddress)
    }
}

/// Which entries a reader asks for (`GET /v1/admin/audit-log`), newest first.
public struct AuditQuery: Sendable, Equatable {
    public var accountId: UUID?
    public var projectId: UUID?
    /// An actor's label (`operator`, `api_key:<id>`…) or type (`member`…).
    public var actor: String?
    public var action: String?
    public var from: Date?
    public var to: Date?
    /// The last entry of the previous page: entries strictly older, by `(at, id)`.
    public var after: (at: Date, id: UUID)?
    public var limit: Int

    /// Creates a value.
    public init(accountId: UUID? = nil, projectId: UUID? = nil, actor: String? = nil, action: String? = nil,
                from: Date? = nil, to: Date? = nil, after: (at: Date, id: UUID)? = nil, limit: Int = 100) {
        self.accountId = accountId
        self.projectId = projectId
        self.actor = actor
        self.action = action
        self.from = from
        self.to = to
        self.after = after
        self.limit = limit
    }

    public static func == (a: AuditQuery, b: AuditQuery) -> Bool {
        a.accountId == b.accountId && a.projectId == b.projectId && a.actor == b.actor && a.action == b.action
            && a.from == b.from && a.to == b.to && a.after?.at == b.after?.at && a.after?.id == b.after?.id
            && a.limit == b.limit
    }
}

/// The audit log's storage. Entries of changes are written by the changing store itself (`AuditContext`); this
/// port appends failed sign-ins and reads.
public protocol AuditLogStore: Sendable {
    /// Appends one entry in its own transaction.
    func append(_ entry: AuditEntry) throws
    /// The entries `query` selects, newest first by `(at, id)`, at most `query.limit`.
    func entries(_ query: AuditQuery) throws -> [AuditEntry]
    /// Deletes at most `limit` entries older than `cutoff`, oldest first; returns how many.
    func deleteEntries(before cutoff: Date, limit: Int) throws -> Int
}

/// Reading the audit log: members and keys read only their own account's entries; the operator reads all.
public struct AuditLog: Sendable {
    /// The most entries one page holds.
    public static let maximumLimit = 1000
    /// `BOUNCER_AUDIT_RETENTION_DAYS`' default.
    public static let defaultRetentionDays = 400

    private let store: any AuditLogStore

    /// Creates a value.
    public init(store: any AuditLogStore) { self.store = store }

    /// The page `query` selects, scoped to what `principal` may see: a member or key asking about another account
    /// sees nothing (the same empty page as an account without entries); a key limited to some projects sees their
    /// entries only.
    public func entries(_ query: AuditQuery, for principal: Principal) throws -> [AuditEntry] {
        try principal.require(.auditRead)
        var query = query
        query.limit = max(query.limit, 1)
        if let own = principal.accountId {
            if let asked = query.accountId, asked != own { return [] }
            query.accountId = own
        }
        if case .apiKey(_, _, _, let projectIds?) = principal {
            if let asked = query.projectId {
                guard projectIds.contains(asked) else { return [] }
            } else {
                // A key limited to some projects reads those projects' entries one project at a time.
                var all: [AuditEntry] = []
                for id in projectIds {
                    var one = query
                    one.projectId = id
                    all += try store.entries(one)
                }
                all.sort { ($0.at, $0.id.uuidString) > ($1.at, $1.id.uuidString) }
                return Array(all.prefix(query.limit))
            }
        }
        return try store.entries(query)
    }
}
