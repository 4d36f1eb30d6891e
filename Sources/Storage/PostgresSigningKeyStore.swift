public import Domain
public import Foundation
import Postgres

/// The server's entitlement-token signing keys in `signing_keys` (the private key only sealed). Not a tenant table:
/// one JWKS serves every project. Errors: see `StorageErrors` (`.serviceUnavailable`).
///
/// Creating the first key and rotating take a transaction-scoped advisory lock, so two instances starting together
/// (or a rotation racing a first start) queue: the second sees the first's key. The partial unique index on
/// `retired_at IS NULL` backs this up: two current keys cannot exist.
public final class PostgresSigningKeyStore: PostgresStore, @unchecked Sendable, SigningKeyStore {
    /// The advisory lock (two-int form) of signing-key changes; reconciliation's class is 16979.
    static let lockClass: Int32 = 16_980

    private static let columns = "kid, public_x, public_y, sealed_private_key, encryption_key_id, created_at, retired_at"

    /// The current key.
    public func currentSigningKey() throws -> StoredSigningKey? {
        try StorageErrors.mapping("current signing key") {
            try pool.withConnection { connection in
                try connection.query(
                    "SELECT \(unsafeSQL: Self.columns) FROM signing_keys WHERE retired_at IS NULL"
                ).first.map(Self.stored(from:))
            }
        }
    }

    /// Inserts `key` as current unless one exists (under the lock); the current key after.
    public func insertFirstSigningKey(_ key: StoredSigningKey) throws -> StoredSigningKey {
        try StorageErrors.mapping("insert first signing key") {
            try pool.transaction { connection in
                try Self.lock(connection)
                if let current = try connection.query(
                    "SELECT \(unsafeSQL: Self.columns) FROM signing_keys WHERE retired_at IS NULL"
                ).first.map(Self.stored(from:)) {
                    return current
                }
                try Self.insert(key, connection)
                return key
            }
        }
    }

    /// Retires the current key at `now` and inserts `key` as current, in one transaction under the lock.
    public func rotateSigningKey(to key: StoredSigningKey, now: Date) throws -> SigningKey? {
        try StorageErrors.mapping("rotate signing key") {
            try pool.transaction { connection in
                try Self.lock(connection)
                let retired = try connection.query("""
                    UPDATE signing_keys SET retired_at = \(now) WHERE retired_at IS NULL
                    RETURNING \(unsafeSQL: Self.columns)
                    """).first.map(Self.stored(from:))?.publicHalf
                try Self.insert(key, connection)
                return retired
            }
        }
    }

    /// Public halves, newest first; 50 is far more than the JWKS ever publishes.
    public func signingKeys() throws -> [SigningKey] {
        try StorageErrors.mapping("signing keys") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT \(unsafeSQL: Self.columns) FROM signing_keys ORDER BY created_at DESC, kid LIMIT 50
                    """).map { try Self.stored(from: $0).publicHalf }
            }
        }
    }

    private static func lock(_ connection: Connection) throws {
        _ = try connection.query("SELECT pg_advisory_xact_lock(\(lockClass)::int, 0)")
    }

    private static func insert(_ key: StoredSigningKey, _ connection: Connection) throws {
        try connection.execute("""
            INSERT INTO signing_keys (kid, public_x, public_y, sealed_private_key, encryption_key_id, created_at,
                retired_at)
            VALUES (\(key.publicHalf.kid), \(key.publicHalf.x), \(key.publicHalf.y), \(key.sealedPrivateKey.bytes),
                \(key.sealedPrivateKey.keyId), \(key.publicHalf.createdAt), \(Bind.date(key.publicHalf.retiredAt)))
            """)
    }

    private static func stored(from row: Row) throws -> StoredSigningKey {
        StoredSigningKey(
            publicHalf: SigningKey(
                kid: try row.decode("kid", as: String.self), x: try row.decode("public_x", as: String.self),
                y: try row.decode("public_y", as: String.self), createdAt: try row.decode("created_at", as: Date.self),
                retiredAt: try row.decode("retired_at", as: Date?.self)),
            sealedPrivateKey: SealedSecret(
                keyId: try row.decode("encryption_key_id", as: String.self),
                bytes: try row.decode("sealed_private_key", as: [UInt8].self)))
    }
}
