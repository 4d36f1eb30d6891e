public import Domain
public import Foundation
import Postgres

/// Per-project App Store Server API credentials in `app_store_credentials` (one row per project; the private key
/// only sealed). Errors: see `StorageErrors` (`.serviceUnavailable`, `.projectNotFound`).
public final class PostgresCredentialStore: PostgresStore, @unchecked Sendable, AppStoreCredentialStore {
    private static let columns = """
        issuer_id, key_id, key_fingerprint, sealed_private_key, encryption_key_id, created_at, updated_at
        """

    /// The project's credentials, if any.
    public func credentials(projectId: UUID) throws -> StoredAppStoreCredentials? {
        try StorageErrors.mapping("app store credentials") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT \(unsafeSQL: Self.columns) FROM app_store_credentials WHERE project_id = \(projectId)
                    """).first.map(Self.credentials(from:))
            }
        }
    }

    /// Upserts the row; a re-set keeps the first `created_at`. The foreign key makes an unknown project
    /// `.projectNotFound` (23503), also when the project is deleted concurrently.
    public func setCredentials(projectId: UUID, _ stored: StoredAppStoreCredentials) throws
        -> StoredAppStoreCredentials
    {
        let c = stored.publicHalf
        return try StorageErrors.mapping("set app store credentials") {
            try pool.transaction { connection in
                let before = try connection.query("""
                    SELECT \(unsafeSQL: Self.columns) FROM app_store_credentials WHERE project_id = \(projectId) FOR UPDATE
                    """).first.map { Self.auditFields(try Self.credentials(from: $0)) }
                let rows = try connection.query("""
                    INSERT INTO app_store_credentials (project_id, issuer_id, key_id, key_fingerprint,
                        sealed_private_key, encryption_key_id, created_at, updated_at)
                    VALUES (\(projectId), \(c.issuerId), \(c.keyId), \(c.keyFingerprint),
                        \(stored.sealedPrivateKey.bytes), \(stored.sealedPrivateKey.keyId), \(c.createdAt), \(c.updatedAt))
                    ON CONFLICT (project_id) DO UPDATE SET issuer_id = EXCLUDED.issuer_id, key_id = EXCLUDED.key_id,
                        key_fingerprint = EXCLUDED.key_fingerprint, sealed_private_key = EXCLUDED.sealed_private_key,
                        encryption_key_id = EXCLUDED.encryption_key_id, updated_at = EXCLUDED.updated_at
                    RETURNING \(unsafeSQL: Self.columns)
                    """)
                guard let row = rows.first else {
                    throw PGError(code: .decoding, message: "INSERT … RETURNING app_store_credentials returned no row")
                }
                let saved = try Self.credentials(from: row)
                try AuditRows.write(connection, changes: AuditRows.diff(before, Self.auditFields(saved))
                    + [AuditChange("private_key", before == nil ? .null : .string("old"), .string("new"))])
                return saved
            }
        }
    }

    /// Deletes the row; false when there was none.
    public func deleteCredentials(projectId: UUID) throws -> Bool {
        try StorageErrors.mapping("delete app store credentials") {
            try pool.transaction { connection in
                guard let row = try connection.query("""
                    DELETE FROM app_store_credentials WHERE project_id = \(projectId) RETURNING \(unsafeSQL: Self.columns)
                    """).first else { return false }
                try AuditRows.write(connection, changes: AuditRows.diff(
                    Self.auditFields(try Self.credentials(from: row)), nil)
                    + [AuditChange("private_key", .string("old"), .null)])
                return true
            }
        }
    }

    /// Credentials as the audit log shows them: the identifiers and the key's fingerprint, never the key.
    static func auditFields(_ stored: StoredAppStoreCredentials) -> [(String, AuditValue)] {
        let c = stored.publicHalf
        return [("issuer_id", .string(c.issuerId)), ("key_id", .string(c.keyId)),
                ("fingerprint", .string(c.keyFingerprint))]
    }

    /// Every sealed private key, ordered by project id (a few rows per tenant at most: one statement).
    public func allSealedPrivateKeys() throws -> [(projectId: UUID, sealed: SealedSecret)] {
        try StorageErrors.mapping("all sealed private keys") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT project_id, sealed_private_key, encryption_key_id FROM app_store_credentials
                    ORDER BY project_id
                    """).map { row in
                    (projectId: try row.decode("project_id", as: UUID.self),
                     sealed: SealedSecret(keyId: try row.decode("encryption_key_id", as: String.self),
                                          bytes: try row.decode("sealed_private_key", as: [UInt8].self)))
                }
            }
        }
    }

    /// Compare-and-swap on the sealed bytes: a concurrent `setCredentials` (new bytes) makes this a no-op.
    public func replaceSealedPrivateKey(projectId: UUID, old: SealedSecret, new: SealedSecret) throws -> Bool {
        try StorageErrors.mapping("re-seal private key") {
            try pool.withConnection { connection in
                try connection.execute("""
                    UPDATE app_store_credentials SET sealed_private_key = \(new.bytes), encryption_key_id = \(new.keyId)
                    WHERE project_id = \(projectId) AND sealed_private_key = \(old.bytes)
                        AND encryption_key_id = \(old.keyId)
                    """) > 0
            }
        }
    }

    static func credentials(from row: Row) throws -> StoredAppStoreCredentials {
        StoredAppStoreCredentials(
            publicHalf: AppStoreCredentials(
                issuerId: try row.decode("issuer_id", as: String.self),
                keyId: try row.decode("key_id", as: String.self),
                keyFingerprint: try row.decode("key_fingerprint", as: String.self),
                createdAt: try row.decode("created_at", as: Date.self),
                updatedAt: try row.decode("updated_at", as: Date.self)),
            sealedPrivateKey: SealedSecret(
                keyId: try row.decode("encryption_key_id", as: String.self),
                bytes: try row.decode("sealed_private_key", as: [UInt8].self)))
    }
}
