import Foundation
import Postgres

/// Bind values whose NULL keeps its type.
///
/// `Query` binds `nil` with an unspecified type (OID 0), so the same statement with a value and with NULL
/// would be two prepared statements with different parameter types; a statement with many optional
/// columns could fill the per-connection cache with variants. Binding NULL with the column's type keeps
/// one prepared statement per SQL text. OIDs are PostgreSQL's stable built-ins (pg_type.dat).
enum Bind {
    private static let int8OID: UInt32 = 20
    private static let boolOID: UInt32 = 16
    private static let timestamptzOID: UInt32 = 1184
    private static let uuidOID: UInt32 = 2950
    private static let byteaOID: UInt32 = 17

    /// `int8` or a typed NULL (assignment casts it to an `int` column).
    static func int(_ value: Int?) -> PostgresValue {
        value.map { Int64($0).postgresValue } ?? PostgresValue(typeOID: int8OID, isBinary: true, bytes: nil)
    }

    /// `int8` or a typed NULL.
    static func int64(_ value: Int64?) -> PostgresValue {
        value.map(\.postgresValue) ?? PostgresValue(typeOID: int8OID, isBinary: true, bytes: nil)
    }

    /// `timestamptz` or a typed NULL.
    static func date(_ value: Date?) -> PostgresValue {
        value.map(\.postgresValue) ?? PostgresValue(typeOID: timestamptzOID, isBinary: true, bytes: nil)
    }

    /// `bool` or a typed NULL.
    static func bool(_ value: Bool?) -> PostgresValue {
        value.map(\.postgresValue) ?? PostgresValue(typeOID: boolOID, isBinary: true, bytes: nil)
    }

    /// `uuid` or a typed NULL.
    static func uuid(_ value: UUID?) -> PostgresValue {
        value.map(\.postgresValue) ?? PostgresValue(typeOID: uuidOID, isBinary: true, bytes: nil)
    }

    /// `bytea` or a typed NULL.
    static func bytes(_ value: [UInt8]?) -> PostgresValue {
        value.map(\.postgresValue) ?? PostgresValue(typeOID: byteaOID, isBinary: true, bytes: nil)
    }

    /// Text of server-inferred type; NULL is already consistent (text binds always have OID 0).
    static func text(_ value: String?) -> PostgresValue {
        value.map(PostgresValue.text) ?? .null
    }
}
