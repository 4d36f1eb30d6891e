public import Foundation
import Primitives

/// A customer of the operator: it owns projects, and its API keys (and, next, members) act within it.
public struct Account: Sendable, Equatable {
    /// The account schema/0050 creates and moves every earlier project into (a fixed id every database agrees on).
    public static let defaultId = UUID(uuid: (0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 1))

    /// Stable identifier.
    public var id: UUID
    /// Display name.
    public var name: String
    /// When the account was created.
    public var createdAt: Date
    /// When the account last changed.
    public var updatedAt: Date

    /// Creates a value.
    public init(id: UUID, name: String, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// An API key of an account as stored and listed: never its text (shown once, `IssuedAPIKey`) nor its digest.
public struct APIKey: Sendable, Equatable {
    /// Stable identifier.
    public var id: UUID
    /// The account the key acts for.
    public var accountId: UUID
    /// What the owner calls it.
    public var name: String
    /// What it may do (`Role.permissions`).
    public var role: Role
    /// The projects it is limited to; nil: every project of the account.
    public var projectIds: [UUID]?
    /// The key's last four characters, to tell keys apart in a list.
    public var last4: String
    /// When it was created.
    public var createdAt: Date
    /// When it stops working; nil: never (until revoked).
    public var expiresAt: Date?
    /// When it was last used, to within `APIKeyRules.lastUsedResolution`.
    public var lastUsedAt: Date?

    /// Creates a value.
    public init(id: UUID, accountId: UUID, name: String, role: Role, projectIds: [UUID]?, last4: String,
                createdAt: Date, expiresAt: Date?, lastUsedAt: Date?) {
        self.id = id
        self.accountId = accountId
        self.name = name
        self.role = role
        self.projectIds = projectIds
        self.last4 = last4
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.lastUsedAt = lastUsedAt
    }

    /// Whether the key works at `now` (revoked keys are deleted, so only expiry remains).
    public func isLive(at now: Date) -> Bool { expiresAt.map { now < $0 } ?? true }

    /// The principal the key acts as.
    public var principal: Principal {
        .apiKey(id: id, accountId: accountId, role: role, projectIds: projectIds)
    }
}

/// A key just created: its text appears in this value only, once.
public struct IssuedAPIKey: Sendable, Equatable {
    /// The stored key.
    public var key: APIKey
    /// `bk_…`, never stored (only its digest is).
    public var text: String
}

/// What a caller asks for when creating an API key.
public struct NewAPIKey: Sendable, Equatable {
    /// What the owner calls it.
    public var name: String
    /// What it may do.
    public var role: Role
    /// The projects it is limited to; nil: every project of the account.
    public var projectIds: [UUID]?
    /// When it stops working; nil: never.
    public var expiresAt: Date?

    /// Creates a value.
    public init(name: String, role: Role, projectIds: [UUID]? = nil, expiresAt: Date? = nil) {
        self.name = name
        self.role = role
        self.projectIds = projectIds
        self.expiresAt = expiresAt
    }
}

/// The limits of accounts and API keys, in one place for every front end.
public enum AccountRules {
    /// Display name length of accounts and keys, in Unicode scalars.
    public static let nameLength = 1...200
    /// Projects one key may be limited to.
    public static let maxKeyProjects = 100
    /// `last_used_at` is written at most once per this many seconds per key (not a write per request).
    public static let lastUsedResolutionSeconds: TimeInterval = 60

    /// A new key's text: `bk_` and 64 lowercase hex digits (256 random bits, so its SHA-256 needs no salt).
    public static func generateKey(using generator: inout some RandomNumberGenerator) -> String {
        "bk_" + Hex.random(count: 32, using: &generator)
    }

    /// Whether `text` looks like an API key (cheap syntax check before any lookup).
    public static func isKeySyntax(_ text: String) -> Bool {
        text.hasPrefix("bk_") && text.utf8.count == 67 && text.utf8.dropFirst(3).allSatisfy(Hex.isLowercaseDigit)
    }

    /// Every rule a display name breaks.
    public static func problems(name: String, path: [String] = ["name"]) -> [FieldProblem] {
        var out: [FieldProblem] = []
        ProjectRules.checkString(name, path, nameLength, &out)
        return out
    }
}

/// Accounts and API keys, in PostgreSQL (`PostgresAccountStore`). Throws `DomainError` (`.serviceUnavailable`…).
public protocol AccountStore: Sendable {
    /// Stores a new account.
    func createAccount(name: String, now: Date) throws -> Account
    /// Every account, oldest first.
    func accounts() throws -> [Account]
    /// The account with `id`.
    func account(id: UUID) throws -> Account?
    /// Renames an account; nil when there is none.
    func updateAccount(id: UUID, name: String, now: Date) throws -> Account?
    /// Deletes an account without projects (its keys go with it), atomically with the check: `.accountNotFound`,
    /// `.accountHasProjects`.
    func deleteAccount(id: UUID) throws
    /// Stores a key (only `hash`, the SHA-256 of its text).
    func createAPIKey(_ key: APIKey, hash: [UInt8]) throws -> APIKey
    /// The account's keys, oldest first.
    func apiKeys(accountId: UUID) throws -> [APIKey]
    /// Deletes (revokes) a key; false when the account has no such key.
    func deleteAPIKey(accountId: UUID, id: UUID) throws -> Bool
    /// The key whose digest is `hash`, with the stored digest (the caller compares both in constant time). Records
    /// `now` as its `last_used_at` when the stored one is older than `AccountRules.lastUsedResolutionSeconds`, in
    /// the same statement: a write at most once a minute per key, never per request.
    func apiKey(hash: [UInt8], at now: Date) throws -> (key: APIKey, hash: [UInt8])?
}

/// The account and API-key use cases, shared by the admin API and the CLI. The route already checked the
/// principal's permission and that it reaches the account in the path; these check what depends on the input:
/// an account named in a body, a key that may not do more than its creator.
///
/// Throws `DomainError`: `.invalidInput` (with `details`), `.accountNotFound`, `.accountHasProjects`,
/// `.apiKeyNotFound`, `.permissionDenied`, and the stores'.
public struct AccountAdministration: Sendable {
    private let store: any AccountStore
    private let projects: any ProjectStore
    private let hasher: any SecretKeyHashing
    private let now: @Sendable () -> Date

    /// Use cases over `store`, checking key scopes against `projects`.
    public init(store: any AccountStore, projects: any ProjectStore, hasher: any SecretKeyHashing,
                now: @escaping @Sendable () -> Date) {
        self.store = store
        self.projects = projects
        self.hasher = hasher
        self.now = now
    }

    /// Creates an account.
    public func createAccount(name: String) throws -> Account {
        try Self.require(AccountRules.problems(name: name), "Invalid account.")
        return try store.createAccount(name: name, now: now())
    }

    /// Every account the principal reaches, oldest first.
    public func accounts(for principal: Principal) throws -> [Account] {
        try store.accounts().filter { principal.reaches(account: $0.id) }
    }

    /// The account with `id`, if the principal reaches it.
    public func account(id: UUID, for principal: Principal) throws -> Account {
        guard principal.reaches(account: id), let account = try store.account(id: id) else { throw Self.notFound(id) }
        return account
    }

    /// Renames an account.
    public func renameAccount(id: UUID, name: String) throws -> Account {
        try Self.require(AccountRules.problems(name: name), "Invalid account.")
        guard let account = try store.updateAccount(id: id, name: name, now: now()) else { throw Self.notFound(id) }
        return account
    }

    /// Deletes an account that owns no project.
    public func deleteAccount(id: UUID) throws {
        try store.deleteAccount(id: id)
    }

    /// Creates a key of account `accountId` for `principal`: the key may not do more than the principal (its role
    /// and, for a key limited to projects, those projects), and its projects must be the account's.
    public func createAPIKey(accountId: UUID, _ new: NewAPIKey, by principal: Principal) throws -> IssuedAPIKey {
        let at = now()
        var problems = AccountRules.problems(name: new.name)
        if let expiresAt = new.expiresAt, expiresAt <= at {
            problems.append(FieldProblem(path: ["expires_at"], message: "Must be in the future"))
        }
        if let ids = new.projectIds, ids.count > AccountRules.maxKeyProjects {
            problems.append(FieldProblem(path: ["project_ids"],
                                         message: "Array must contain at most \(AccountRules.maxKeyProjects) element(s)"))
        }
        try Self.require(problems, "Invalid API key.")
        guard principal.reaches(account: accountId), try store.account(id: accountId) != nil else {
            throw Self.notFound(accountId)
        }
        if let role = principal.role, !role.includes(new.role) {
            let missing = new.role.permissions.subtracting(role.permissions).sorted()
            if let first = missing.first { throw DomainError.permissionDenied(first) }
        }
        var projectIds = new.projectIds.map { ids in ids.reduce(into: [UUID]()) { if !$0.contains($1) { $0.append($1) } } }
        if case .apiKey(_, _, _, let own?) = principal {
            // A limited key creates limited keys only, within its own projects.
            projectIds = projectIds ?? own
        }
        if let ids = projectIds {
            var unknown: [FieldProblem] = []
            for (i, id) in ids.enumerated() {
                let project = try projects.project(id: id)
                if project?.accountId != accountId || !principal.reaches(project: id, ofAccount: accountId) {
                    unknown.append(FieldProblem(path: ["project_ids", String(i)], message: "No such project in this account"))
                }
            }
            try Self.require(unknown, "Invalid API key.")
        }
        var rng = SystemRandomNumberGenerator()
        let text = AccountRules.generateKey(using: &rng)
        let key = APIKey(id: UUID(), accountId: accountId, name: new.name, role: new.role, projectIds: projectIds,
                         last4: String(text.suffix(4)), createdAt: at, expiresAt: new.expiresAt, lastUsedAt: nil)
        return IssuedAPIKey(key: try store.createAPIKey(key, hash: hasher.hash(text)), text: text)
    }

    /// The account's keys, oldest first.
    public func apiKeys(accountId: UUID) throws -> [APIKey] {
        guard try store.account(id: accountId) != nil else { throw Self.notFound(accountId) }
        return try store.apiKeys(accountId: accountId)
    }

    /// Revokes a key at once.
    public func revokeAPIKey(accountId: UUID, id: UUID) throws {
        guard try store.deleteAPIKey(accountId: accountId, id: id) else {
            throw DomainError(.apiKeyNotFound, "No API key \(id.lowercasedText) in this account.")
        }
    }

    /// The principal a presented `bk_…` text stands for: nil unless it is a live key. Looked up by its SHA-256,
    /// then the digests compared in constant time.
    public func principal(presenting text: String) throws -> Principal? {
        guard AccountRules.isKeySyntax(text) else { return nil }
        let digest = hasher.hash(text)
        let at = now()
        guard let found = try store.apiKey(hash: digest, at: at), ProjectKeys.constantTimeEquals(found.hash, digest),
              found.key.isLive(at: at) else { return nil }
        return found.key.principal
    }

    private static func require(_ problems: [FieldProblem], _ message: String) throws {
        if !problems.isEmpty { throw DomainError(.invalidInput, message, details: problems) }
    }

    /// The 404 of an account that does not exist or that the caller may not see: the same answer.
    public static func notFound(_ id: UUID) -> DomainError {
        DomainError(.accountNotFound, "No account \(id.lowercasedText).")
    }
}
