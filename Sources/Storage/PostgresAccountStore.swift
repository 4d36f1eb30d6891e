public import Domain
public import Foundation
import Postgres

/// Accounts and their API keys, in PostgreSQL (schema/0050). Keys are stored as the SHA-256 of their text only.
/// Errors: see `StorageErrors`, plus `.accountNotFound` and `.accountHasProjects` from `deleteAccount`.
public final class PostgresAccountStore: PostgresStore, @unchecked Sendable, AccountStore {
    private static let accountColumns = "id, name, created_at, updated_at"
    /// `project_ids` as text so the driver reads it as `[String]` (NULL: every project of the account).
    private static let keyColumns = """
        account_id, id, name, role, project_ids::text[] AS project_ids, last4, created_at, expires_at, last_used_at
        """

    public func createAccount(name: String, now: Date) throws -> Account {
        try StorageErrors.mapping("create account") {
            try pool.transaction { connection in
                let rows = try connection.query("""
                    INSERT INTO accounts (id, name, created_at, updated_at) VALUES (\(UUID()), \(name), \(now), \(now))
                    RETURNING \(unsafeSQL: Self.accountColumns)
                    """)
                guard let row = rows.first else { throw PostgresProjectStore.missingRow("INSERT accounts") }
                let account = try Self.account(from: row)
                try AuditRows.write(connection, accountId: account.id, target: "account:" + account.id.lowercasedText,
                                    changes: [AuditChange("name", .null, .string(account.name))])
                return account
            }
        }
    }

    public func accounts() throws -> [Account] {
        try StorageErrors.mapping("accounts") {
            try pool.withConnection { connection in
                try connection.query("SELECT \(unsafeSQL: Self.accountColumns) FROM accounts ORDER BY created_at, id")
                    .map(Self.account(from:))
            }
        }
    }

    public func account(id: UUID) throws -> Account? {
        try StorageErrors.mapping("account") {
            try pool.withConnection { connection in
                try connection.query("SELECT \(unsafeSQL: Self.accountColumns) FROM accounts WHERE id = \(id)")
                    .first.map(Self.account(from:))
            }
        }
    }

    public func updateAccount(id: UUID, name: String, now: Date) throws -> Account? {
        try StorageErrors.mapping("update account") {
            try pool.transaction { connection in
                guard let before = try connection.query("SELECT name FROM accounts WHERE id = \(id) FOR UPDATE")
                    .first?.decode("name", as: String.self) else { return nil }
                let updated = try connection.query("""
                    UPDATE accounts SET name = \(name), updated_at = \(now) WHERE id = \(id)
                    RETURNING \(unsafeSQL: Self.accountColumns)
                    """).first.map(Self.account(from:))
                try AuditRows.write(connection, changes: AuditRows.diff(
                    [("name", .string(before))], updated.map { [("name", .string($0.name))] }))
                return updated
            }
        }
    }

    /// Under the account's row lock, which a project's creation waits for (`FOR KEY SHARE`), so no project can
    /// appear between the count and the delete.
    public func deleteAccount(id: UUID) throws {
        try StorageErrors.mapping("delete account") {
            try pool.transaction { connection in
                guard try connection.query("SELECT 1 FROM accounts WHERE id = \(id) FOR UPDATE").first != nil else {
                    throw AccountAdministration.notFound(id)
                }
                let count = try connection.query("SELECT count(*) AS n FROM projects WHERE account_id = \(id)")
                    .first?.decode("n", as: Int64.self) ?? 0
                guard count == 0 else {
                    throw DomainError(.accountHasProjects, "The account still owns \(count) project(s).")
                }
                let name = try connection.query("DELETE FROM accounts WHERE id = \(id) RETURNING name")
                    .first?.decode("name", as: String.self)
                try AuditRows.write(connection, changes: [AuditChange("name", .text(name), .null)])
            }
        }
    }

    public func createAPIKey(_ key: APIKey, hash: [UInt8]) throws -> APIKey {
        try StorageErrors.mapping("create API key") {
            try pool.transaction { connection in
                let rows = try connection.query("""
                    INSERT INTO api_keys (account_id, id, name, role, project_ids, key_hash, last4, created_at,
                        expires_at)
                    VALUES (\(key.accountId), \(key.id), \(key.name), \(key.role.rawValue),
                        CASE WHEN \(key.projectIds != nil) THEN \(Self.idTexts(key.projectIds))::uuid[] END,
                        \(hash), \(key.last4), \(key.createdAt), \(Bind.date(key.expiresAt)))
                    RETURNING \(unsafeSQL: Self.keyColumns)
                    """)
                guard let row = rows.first else { throw PostgresProjectStore.missingRow("INSERT api_keys") }
                let created = try Self.key(from: row)
                try AuditRows.write(connection, target: "api_key:" + created.id.lowercasedText,
                                    changes: AuditRows.diff(nil, Self.auditFields(created)))
                return created
            }
        }
    }

    public func apiKeys(accountId: UUID) throws -> [APIKey] {
        try StorageErrors.mapping("API keys") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT \(unsafeSQL: Self.keyColumns) FROM api_keys WHERE account_id = \(accountId)
                    ORDER BY created_at, id
                    """).map(Self.key(from:))
            }
        }
    }

    public func deleteAPIKey(accountId: UUID, id: UUID) throws -> Bool {
        try StorageErrors.mapping("delete API key") {
            try pool.transaction { connection in
                let deleted = try connection.query("""
                    DELETE FROM api_keys WHERE account_id = \(accountId) AND id = \(id)
                    RETURNING \(unsafeSQL: Self.keyColumns)
                    """).first.map(Self.key(from:))
                guard let deleted else { return false }
                try AuditRows.write(connection, changes: AuditRows.diff(Self.auditFields(deleted), nil))
                return true
            }
        }
    }

    /// A key as the audit log shows it: never its text or digest.
    static func auditFields(_ key: APIKey) -> [(String, AuditValue)] {
        [("name", .string(key.name)), ("role", .string(key.role.rawValue)),
         ("project_ids", key.projectIds.map { .list($0.map { .id($0) }) } ?? .null), ("last4", .string(key.last4)),
         ("expires_at", .date(key.expiresAt))]
    }

    /// One statement: the key by its digest (the unique index), and, when its `last_used_at` is a minute old or
    /// unset, `now` written there (the returned row shows the value before).
    public func apiKey(hash: [UInt8], at now: Date) throws -> (key: APIKey, hash: [UInt8])? {
        try StorageErrors.mapping("API key by hash") {
            try pool.withConnection { connection in
                let rows = try connection.query("""
                    WITH found AS (
                        SELECT \(unsafeSQL: Self.keyColumns), key_hash FROM api_keys WHERE key_hash = \(hash)
                    ), touched AS (
                        UPDATE api_keys SET last_used_at = \(now)
                        FROM found
                        WHERE api_keys.account_id = found.account_id AND api_keys.id = found.id
                          AND (found.last_used_at IS NULL
                               OR found.last_used_at <= \(now) - make_interval(secs => \(AccountRules.lastUsedResolutionSeconds)))
                          AND (found.expires_at IS NULL OR found.expires_at > \(now))
                    )
                    SELECT * FROM found
                    """)
                guard let row = rows.first else { return nil }
                return (try Self.key(from: row), try row.decode("key_hash", as: [UInt8].self))
            }
        }
    }

    // MARK: - Rows

    private static func idTexts(_ ids: [UUID]?) -> [String] {
        (ids ?? []).map { $0.lowercasedText }
    }

    static func account(from row: Row) throws -> Account {
        Account(id: try row.decode("id", as: UUID.self), name: try row.decode("name", as: String.self),
                createdAt: try row.decode("created_at", as: Date.self),
                updatedAt: try row.decode("updated_at", as: Date.self))
    }

    static func key(from row: Row) throws -> APIKey {
        let roleName = try row.decode("role", as: String.self)
        guard let role = Role(rawValue: roleName) else {
            throw PGError(code: .decoding, message: "api_keys.role has unknown value \(roleName)")
        }
        let projectIds = try row.decode("project_ids", as: [String]?.self).map { texts in
            try texts.map { text in
                guard let id = UUID(uuidString: text) else {
                    throw PGError(code: .decoding, message: "api_keys.project_ids has a malformed uuid")
                }
                return id
            }
        }
        return APIKey(
            id: try row.decode("id", as: UUID.self), accountId: try row.decode("account_id", as: UUID.self),
            name: try row.decode("name", as: String.self), role: role, projectIds: projectIds,
            last4: try row.decode("last4", as: String.self), createdAt: try row.decode("created_at", as: Date.self),
            expiresAt: try row.decode("expires_at", as: Date?.self),
            lastUsedAt: try row.decode("last_used_at", as: Date?.self))
    }
}
