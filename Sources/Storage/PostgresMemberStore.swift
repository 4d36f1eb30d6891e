public import Domain
public import Foundation
import Postgres

/// Members of accounts, in `members` (schema/0051). Invite tokens are stored as their SHA-256, passwords as
/// PBKDF2 digests with salt and iteration count, TOTP secrets sealed. Errors: see `StorageErrors`, plus
/// `.accountNotFound`, `.memberEmailTaken` and `.lastOwner`.
public final class PostgresMemberStore: PostgresStore, @unchecked Sendable, MemberStore {
    private static let columns = """
        account_id, id, email, role, password_hash IS NOT NULL AS active, totp_sealed IS NOT NULL AS totp_enabled,
        invite_expires_at, created_at, updated_at
        """

    /// Under `FOR KEY SHARE` of the account, which an account's delete (`FOR UPDATE`) waits for.
    public func createMember(_ member: Member, inviteHash: [UInt8]) throws -> Member {
        try StorageErrors.mapping("create member") {
            try pool.transaction { connection in
                guard try connection.query("SELECT 1 FROM accounts WHERE id = \(member.accountId) FOR KEY SHARE")
                    .first != nil else { throw AccountAdministration.notFound(member.accountId) }
                let rows = try connection.query("""
                    INSERT INTO members (account_id, id, email, role, invite_hash, invite_expires_at, created_at,
                                         updated_at)
                    VALUES (\(member.accountId), \(member.id), \(member.email), \(member.role.rawValue), \(inviteHash),
                            \(Bind.date(member.inviteExpiresAt)), \(member.createdAt), \(member.updatedAt))
                    ON CONFLICT (account_id, email) DO NOTHING
                    RETURNING \(unsafeSQL: Self.columns)
                    """)
                guard let row = rows.first else {
                    throw DomainError(.memberEmailTaken, "The account already has a member with this email.")
                }
                let created = try Self.member(from: row)
                try AuditRows.write(connection, target: "member:" + created.id.lowercasedText, changes: [
                    AuditChange("email", .null, .string(created.email)),
                    AuditChange("role", .null, .string(created.role.rawValue)),
                    AuditChange("invite_token", .null, .string("issued")),
                ])
                return created
            }
        }
    }

    public func members(accountId: UUID) throws -> [Member] {
        try StorageErrors.mapping("members") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT \(unsafeSQL: Self.columns) FROM members WHERE account_id = \(accountId) ORDER BY created_at, id
                    """).map(Self.member(from:))
            }
        }
    }

    public func member(accountId: UUID, id: UUID) throws -> Member? {
        try StorageErrors.mapping("member") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT \(unsafeSQL: Self.columns) FROM members WHERE account_id = \(accountId) AND id = \(id)
                    """).first.map(Self.member(from:))
            }
        }
    }

    /// Under the account's row lock, so two owners demoting each other at once cannot both succeed.
    public func updateRole(accountId: UUID, id: UUID, role: Role, now: Date) throws -> Member? {
        try StorageErrors.mapping("update member role") {
            try pool.transaction { connection in
                guard try Self.lockForOwnerChange(connection, accountId: accountId, id: id, leavingOwner: role != .owner)
                else { return nil }
                let before = try connection.query("""
                    SELECT role FROM members WHERE account_id = \(accountId) AND id = \(id)
                    """).first?.decode("role", as: String.self)
                let rows = try connection.query("""
                    UPDATE members SET role = \(role.rawValue), updated_at = \(now)
                    WHERE account_id = \(accountId) AND id = \(id)
                    RETURNING \(unsafeSQL: Self.columns)
                    """)
                _ = try connection.execute("""
                    DELETE FROM console_sessions WHERE account_id = \(accountId) AND member_id = \(id)
                    """)
                guard let updated = try rows.first.map(Self.member(from:)) else { return nil }
                try AuditRows.write(connection, changes: AuditRows.diff(
                    [("role", .text(before))], [("role", .string(updated.role.rawValue))]))
                return updated
            }
        }
    }

    /// Sessions go with the row (`ON DELETE CASCADE`).
    public func deleteMember(accountId: UUID, id: UUID) throws -> Bool {
        try StorageErrors.mapping("delete member") {
            try pool.transaction { connection in
                guard try Self.lockForOwnerChange(connection, accountId: accountId, id: id, leavingOwner: true) else {
                    return false
                }
                guard let row = try connection.query("""
                    DELETE FROM members WHERE account_id = \(accountId) AND id = \(id) RETURNING email, role
                    """).first else { return false }
                try AuditRows.write(connection, changes: [
                    AuditChange("email", .string(try row.decode("email", as: String.self)), .null),
                    AuditChange("role", .string(try row.decode("role", as: String.self)), .null),
                ])
                return true
            }
        }
    }

    /// Locks the account, then: false when the member does not exist; `.lastOwner` when the member is an active
    /// owner, `leavingOwner`, and no other active owner remains.
    private static func lockForOwnerChange(_ connection: Connection, accountId: UUID, id: UUID,
                                           leavingOwner: Bool) throws -> Bool {
        _ = try connection.query("SELECT 1 FROM accounts WHERE id = \(accountId) FOR UPDATE")
        let rows = try connection.query("""
            SELECT role = 'owner' AND password_hash IS NOT NULL AS active_owner,
                   (SELECT count(*) FROM members o WHERE o.account_id = \(accountId) AND o.id <> \(id)
                        AND o.role = 'owner' AND o.password_hash IS NOT NULL) AS other_owners
            FROM members WHERE account_id = \(accountId) AND id = \(id)
            """)
        guard let row = rows.first else { return false }
        if leavingOwner, try row.decode("active_owner", as: Bool.self),
           try row.decode("other_owners", as: Int64.self) == 0 {
            throw DomainError(.lastOwner, "This is the account's last owner.")
        }
        return true
    }

    /// One statement: the live invite's row gets the password and loses the invite; then the member's sessions end.
    public func acceptInvite(hash: [UInt8], password: StoredPassword, now: Date) throws -> Member? {
        try StorageErrors.mapping("accept invite") {
            try pool.transaction { connection in
                let rows = try connection.query("""
                    UPDATE members SET password_hash = \(password.hash), password_salt = \(password.salt),
                        password_iterations = \(password.iterations), invite_hash = NULL, invite_expires_at = NULL,
                        updated_at = \(now)
                    WHERE invite_hash = \(hash) AND invite_expires_at > \(now)
                    RETURNING \(unsafeSQL: Self.columns)
                    """)
                guard let member = try rows.first.map(Self.member(from:)) else { return nil }
                _ = try connection.execute("""
                    DELETE FROM console_sessions WHERE account_id = \(member.accountId) AND member_id = \(member.id)
                    """)
                return member
            }
        }
    }

    public func credentials(email: String, accountId: UUID?) throws -> MemberCredentials? {
        try StorageErrors.mapping("member credentials") {
            try pool.withConnection { connection in
                let rows = try connection.query("""
                    SELECT \(unsafeSQL: Self.columns), password_hash, password_salt,
                           password_iterations::bigint AS password_iterations, totp_key_id,
                           totp_sealed
                    FROM members
                    WHERE email = \(email) AND password_hash IS NOT NULL
                      AND (\(accountId == nil) OR account_id = \(accountId ?? UUID()))
                    ORDER BY created_at, id LIMIT 1
                    """)
                guard let row = rows.first else { return nil }
                var password: StoredPassword?
                if let hash = try row.decode("password_hash", as: [UInt8]?.self),
                   let salt = try row.decode("password_salt", as: [UInt8]?.self),
                   let iterations = try row.decode("password_iterations", as: Int64?.self) {
                    password = StoredPassword(hash: hash, salt: salt, iterations: Int(iterations))
                }
                var sealed: SealedSecret?
                if let keyId = try row.decode("totp_key_id", as: String?.self),
                   let bytes = try row.decode("totp_sealed", as: [UInt8]?.self) {
                    sealed = SealedSecret(keyId: keyId, bytes: bytes)
                }
                return MemberCredentials(member: try Self.member(from: row), password: password, sealedTOTPSecret: sealed)
            }
        }
    }

    public func setTOTPSecret(accountId: UUID, id: UUID, sealed: SealedSecret, now: Date) throws -> Bool {
        try StorageErrors.mapping("set member TOTP") {
            try pool.transaction { connection in
                guard let row = try connection.query("""
                    UPDATE members m SET totp_key_id = \(sealed.keyId), totp_sealed = \(sealed.bytes),
                        totp_last_step = NULL, updated_at = \(now)
                    FROM (SELECT totp_sealed IS NOT NULL AS enabled FROM members
                          WHERE account_id = \(accountId) AND id = \(id) FOR UPDATE) old
                    WHERE m.account_id = \(accountId) AND m.id = \(id)
                    RETURNING old.enabled
                    """).first else { return false }
                try AuditRows.write(connection, changes: [
                    AuditChange("two_factor_enabled", .bool(try row.decode("enabled", as: Bool.self)), .bool(true)),
                    AuditChange("totp_secret", .string("old"), .string("new")),
                ])
                return true
            }
        }
    }

    /// One conditional update: two sign-ins with the same code cannot both claim its step.
    public func useTOTPStep(accountId: UUID, id: UUID, step: Int64) throws -> Bool {
        try StorageErrors.mapping("use TOTP step") {
            try pool.withConnection { connection in
                try connection.execute("""
                    UPDATE members SET totp_last_step = \(step)
                    WHERE account_id = \(accountId) AND id = \(id)
                      AND (totp_last_step IS NULL OR totp_last_step < \(step))
                    """) > 0
            }
        }
    }

    static func member(from row: Row) throws -> Member {
        let roleName = try row.decode("role", as: String.self)
        guard let role = Role(rawValue: roleName) else {
            throw PGError(code: .decoding, message: "members.role has unknown value \(roleName)")
        }
        return Member(
            id: try row.decode("id", as: UUID.self), accountId: try row.decode("account_id", as: UUID.self),
            email: try row.decode("email", as: String.self), role: role, active: try row.decode("active", as: Bool.self),
            totpEnabled: try row.decode("totp_enabled", as: Bool.self),
            inviteExpiresAt: try row.decode("invite_expires_at", as: Date?.self),
            createdAt: try row.decode("created_at", as: Date.self), updatedAt: try row.decode("updated_at", as: Date.self))
    }
}
