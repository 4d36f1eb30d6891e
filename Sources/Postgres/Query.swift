public import Foundation

/// A SQL statement whose interpolated values become bind parameters (`$1`, `$2`, …) by construction.
///
/// ```swift
/// let q: Query = "SELECT name FROM projects WHERE id = \(projectID)"   // id = $1, value bound
/// ```
/// Literal segments are SQL; interpolations are data and can never change the statement's meaning.
/// Raw SQL (identifiers, generated DDL) must be spelled `Query(unsafeSQL:)` or
/// `\(unsafeSQL: …)` so a reviewer can grep every use.
public struct Query: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The statement text with `$n` placeholders.
    public private(set) var sql: String
    /// The bound values in placeholder order.
    public private(set) var binds: [PostgresValue]

    /// A statement taken verbatim, with no parameters. The caller vouches that `unsafeSQL`
    /// contains no untrusted text.
    public init(unsafeSQL: String) {
        self.sql = unsafeSQL
        self.binds = []
    }

    /// A statement with explicit `$n` placeholders and their values.
    public init(unsafeSQL: String, binds: [PostgresValue]) {
        self.sql = unsafeSQL
        self.binds = binds
    }

    /// Creates a query from a literal without interpolations.
    public init(stringLiteral value: String) {
        self.init(unsafeSQL: value)
    }

    /// Creates a query from an interpolated literal (values become parameters).
    public init(stringInterpolation: StringInterpolation) {
        self.sql = stringInterpolation.sql
        self.binds = stringInterpolation.binds
    }

    /// The SQL text only (values are not shown: they may be secrets).
    public var description: String { sql }

    /// Builds the SQL text and the parameter list of an interpolated query.
    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        var sql: String
        var binds: [PostgresValue]

        /// Reserves room for the literal text.
        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = ""
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            binds = []
            binds.reserveCapacity(interpolationCount)
        }

        /// Appends SQL text.
        public mutating func appendLiteral(_ literal: String) { sql += literal }

        /// Appends a bind parameter.
        public mutating func appendInterpolation<T: PostgresEncodable>(_ value: T) {
            binds.append(value.postgresValue)
            sql += "$\(binds.count)"
        }

        /// Appends a bind parameter that may be NULL.
        public mutating func appendInterpolation<T: PostgresEncodable>(_ value: T?) {
            binds.append(value?.postgresValue ?? .null)
            sql += "$\(binds.count)"
        }

        /// Appends raw SQL text (an identifier or keyword computed by our own code, never user input).
        public mutating func appendInterpolation(unsafeSQL: String) { sql += unsafeSQL }
    }
}

/// One bind parameter as it goes over the wire: a type OID (0 lets the server infer it), the
/// format (text or binary) and the bytes, or NULL.
public struct PostgresValue: Sendable, Hashable {
    /// The parameter's type OID; 0 means "unspecified", resolved by the server from context.
    public var typeOID: UInt32
    /// True when `bytes` is in the type's binary send/recv format, false for text format.
    public var isBinary: Bool
    /// The encoded value, nil for SQL NULL.
    public var bytes: [UInt8]?

    /// A value with an explicit OID and format.
    public init(typeOID: UInt32, isBinary: Bool, bytes: [UInt8]?) {
        self.typeOID = typeOID
        self.isBinary = isBinary
        self.bytes = bytes
    }

    /// SQL NULL of unspecified type.
    public static let null = PostgresValue(typeOID: 0, isBinary: false, bytes: nil)

    /// Text of unspecified type: the server infers it from context, so one Swift `String` can fill a
    /// `text`, `uuid`, `jsonb` or `timestamptz` parameter alike.
    public static func text(_ s: String) -> PostgresValue {
        PostgresValue(typeOID: 0, isBinary: false, bytes: Array(s.utf8))
    }
}

/// A Swift value that can be bound as a query parameter.
public protocol PostgresEncodable: Sendable {
    /// The wire form of this value.
    var postgresValue: PostgresValue { get }
}

/// Well-known type OIDs (pg_type.dat); stable across PostgreSQL versions.
enum OID {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let name: UInt32 = 19
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let oid: UInt32 = 26
    static let json: UInt32 = 114
    static let float4: UInt32 = 700
    static let float8: UInt32 = 701
    static let unknown: UInt32 = 705
    static let bpchar: UInt32 = 1042
    static let varchar: UInt32 = 1043
    static let timestamp: UInt32 = 1114
    static let timestamptz: UInt32 = 1184
    static let uuid: UInt32 = 2950
    static let jsonb: UInt32 = 3802
    static let textArray: UInt32 = 1009
    static let varcharArray: UInt32 = 1015
    static let int8Array: UInt32 = 1016

    static func name(_ oid: UInt32) -> String {
        switch oid {
        case bool: "bool"
        case bytea: "bytea"
        case name: "name"
        case int8: "int8"
        case int2: "int2"
        case int4: "int4"
        case text: "text"
        case self.oid: "oid"
        case json: "json"
        case float4: "float4"
        case float8: "float8"
        case unknown: "unknown"
        case bpchar: "bpchar"
        case varchar: "varchar"
        case timestamp: "timestamp"
        case timestamptz: "timestamptz"
        case uuid: "uuid"
        case jsonb: "jsonb"
        case textArray: "text[]"
        case varcharArray: "varchar[]"
        case int8Array: "int8[]"
        default: "oid \(oid)"
        }
    }
}

extension Array where Element == UInt8 {
    @inline(__always)
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        var be = value.bigEndian
        Swift.withUnsafeBytes(of: &be) { self.append(contentsOf: $0) }
    }
}

extension String: PostgresEncodable {
    /// Text of unspecified type (see `PostgresValue.text`).
    public var postgresValue: PostgresValue { .text(self) }
}

extension Substring: PostgresEncodable {
    /// Text of unspecified type.
    public var postgresValue: PostgresValue { .text(String(self)) }
}

extension Int64: PostgresEncodable {
    /// Binary `int8`.
    public var postgresValue: PostgresValue {
        var b: [UInt8] = []
        b.reserveCapacity(8)
        b.appendBigEndian(self)
        return PostgresValue(typeOID: OID.int8, isBinary: true, bytes: b)
    }
}

extension Int: PostgresEncodable {
    /// Binary `int8` (Int is 64-bit on every platform we build for).
    public var postgresValue: PostgresValue { Int64(self).postgresValue }
}

extension Int32: PostgresEncodable {
    /// Binary `int4`.
    public var postgresValue: PostgresValue {
        var b: [UInt8] = []
        b.appendBigEndian(self)
        return PostgresValue(typeOID: OID.int4, isBinary: true, bytes: b)
    }
}

extension Int16: PostgresEncodable {
    /// Binary `int2`.
    public var postgresValue: PostgresValue {
        var b: [UInt8] = []
        b.appendBigEndian(self)
        return PostgresValue(typeOID: OID.int2, isBinary: true, bytes: b)
    }
}

extension Bool: PostgresEncodable {
    /// Binary `bool`.
    public var postgresValue: PostgresValue { PostgresValue(typeOID: OID.bool, isBinary: true, bytes: [self ? 1 : 0]) }
}

extension Double: PostgresEncodable {
    /// Binary `float8` (IEEE 754 bits, so NaN and infinities round-trip).
    public var postgresValue: PostgresValue {
        var b: [UInt8] = []
        b.appendBigEndian(self.bitPattern)
        return PostgresValue(typeOID: OID.float8, isBinary: true, bytes: b)
    }
}

extension UUID: PostgresEncodable {
    /// Binary `uuid` (16 bytes in RFC 4122 order).
    public var postgresValue: PostgresValue {
        let u = uuid
        return PostgresValue(typeOID: OID.uuid, isBinary: true, bytes: [
            u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15,
        ])
    }
}

/// Seconds between the Unix epoch and PostgreSQL's epoch (2000-01-01 00:00:00 UTC).
let postgresEpochOffsetSeconds: Double = 946_684_800

extension Date: PostgresEncodable {
    /// Binary `timestamptz`: microseconds since 2000-01-01 UTC, rounded to the nearest microsecond
    /// (PostgreSQL's resolution).
    public var postgresValue: PostgresValue {
        let micros = ((timeIntervalSince1970 - postgresEpochOffsetSeconds) * 1_000_000).rounded()
        // Out-of-range dates cannot be represented; send infinity's sentinel rather than trapping.
        let value: Int64 = micros.isFinite && abs(micros) < 9.2e18 ? Int64(micros) : (micros < 0 ? Int64.min : Int64.max)
        var b: [UInt8] = []
        b.appendBigEndian(value)
        return PostgresValue(typeOID: OID.timestamptz, isBinary: true, bytes: b)
    }
}

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    /// Binary one-dimensional array (array_send layout: ndim, has-null flag, element OID,
    /// dimension length and lower bound, then length-prefixed elements).
    public var postgresValue: PostgresValue {
        if Element.self == UInt8.self, let bytes = self as? [UInt8] {
            return PostgresValue(typeOID: OID.bytea, isBinary: true, bytes: bytes)
        }
        var b: [UInt8] = []
        let elementOID = Element.postgresArrayElementOID
        if isEmpty {
            b.appendBigEndian(Int32(0)); b.appendBigEndian(Int32(0)); b.appendBigEndian(elementOID)
        } else {
            // One pass, no key path: `map(\.postgresArrayElementBytes)` in this generic context instantiated the
            // key path at run time (demangling its name) for every array bound — ~35,000 instructions an array.
            b.appendBigEndian(Int32(1))
            let hasNullAt = b.count
            b.appendBigEndian(Int32(0)); b.appendBigEndian(elementOID)
            b.appendBigEndian(Int32(truncatingIfNeeded: count)); b.appendBigEndian(Int32(1))
            var hasNull = false
            for element in self {
                guard let bytes = element.postgresArrayElementBytes else {
                    hasNull = true
                    b.appendBigEndian(Int32(-1))  // array_send's NULL element: length -1, no bytes
                    continue
                }
                b.appendBigEndian(Int32(truncatingIfNeeded: bytes.count))
                b.append(contentsOf: bytes)
            }
            if hasNull { b[hasNullAt + 3] = 1 }  // the flag's big-endian Int32 written above: 0 → 1
        }
        return PostgresValue(typeOID: Element.postgresArrayOID, isBinary: true, bytes: b)
    }
}

/// Types that can be array elements (and `UInt8`, whose array is `bytea`).
public protocol PostgresArrayElement: Sendable {
    /// The element type's OID.
    static var postgresArrayElementOID: UInt32 { get }
    /// The array type's OID.
    static var postgresArrayOID: UInt32 { get }
    /// The element in binary format; nil is a NULL element.
    var postgresArrayElementBytes: [UInt8]? { get }
}

extension String: PostgresArrayElement {
    /// `text`.
    public static var postgresArrayElementOID: UInt32 { OID.text }
    /// `text[]`.
    public static var postgresArrayOID: UInt32 { OID.textArray }
    /// UTF-8 bytes (text's binary format is its text).
    public var postgresArrayElementBytes: [UInt8]? { Array(utf8) }
}

extension Int64: PostgresArrayElement {
    /// `int8`.
    public static var postgresArrayElementOID: UInt32 { OID.int8 }
    /// `int8[]`.
    public static var postgresArrayOID: UInt32 { OID.int8Array }
    /// Big-endian 8 bytes.
    public var postgresArrayElementBytes: [UInt8]? { var b: [UInt8] = []; b.appendBigEndian(self); return b }
}

extension UInt8: PostgresArrayElement {
    /// Only used so `[UInt8]` binds as `bytea`.
    public static var postgresArrayElementOID: UInt32 { OID.bytea }
    /// `[UInt8]` is `bytea`, not an array.
    public static var postgresArrayOID: UInt32 { OID.bytea }
    /// The byte itself.
    public var postgresArrayElementBytes: [UInt8]? { [self] }
}

extension Optional: PostgresArrayElement where Wrapped: PostgresArrayElement {
    /// The wrapped type's.
    public static var postgresArrayElementOID: UInt32 { Wrapped.postgresArrayElementOID }
    /// The wrapped type's.
    public static var postgresArrayOID: UInt32 { Wrapped.postgresArrayOID }
    /// The wrapped value's bytes; `nil` binds a NULL element.
    public var postgresArrayElementBytes: [UInt8]? { self?.postgresArrayElementBytes }
}

extension PostgresValue: PostgresEncodable {
    /// Itself.
    public var postgresValue: PostgresValue { self }
}
