public import Foundation

/// The rows of a query result, copied out of libpq's `PGresult` (which is freed at once), so a
/// `Rows` value is immutable, `Sendable`, and outlives its connection.
public struct Rows: Sendable, RandomAccessCollection {
    let storage: ResultStorage

    /// The result's column names, in order.
    public var columns: [String] { storage.columns }
    /// Rows affected by an INSERT/UPDATE/DELETE (libpq `PQcmdTuples`), or the row count of a SELECT.
    public var affectedRows: Int { storage.affectedRows }

    /// The first row's index (0).
    public var startIndex: Int { 0 }
    /// One past the last row's index.
    public var endIndex: Int { storage.rowCount }
    /// The row at `position` (must be in `startIndex..<endIndex`, as for any collection).
    public subscript(position: Int) -> Row { Row(storage: storage, index: position) }
}

/// One result row. Decode columns by name or index:
/// `try row.decode("name", as: String.self)`, or `as: String?.self` when the column may be NULL.
public struct Row: Sendable {
    let storage: ResultStorage
    let index: Int

    /// The result's column names, in order.
    public var columns: [String] { storage.columns }

    /// The raw cell of the named column, or nil if the result has no such column.
    public subscript(column: String) -> PostgresCell? {
        guard let c = storage.columnIndex(column) else { return nil }
        return storage.cell(row: index, column: c)
    }

    /// The raw cell at a column index, or nil when out of range.
    public subscript(column: Int) -> PostgresCell? {
        guard column >= 0 && column < storage.columns.count else { return nil }
        return storage.cell(row: index, column: column)
    }

    /// Decodes a non-NULL column; NULL, a missing column or a type mismatch throws a `.decoding` error
    /// naming the column and both types.
    public func decode<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws(PGError) -> T {
        guard let cell = self[column] else { throw Self.missing(column, storage.columns) }
        return try cell.decode(T.self)
    }

    /// Decodes a column that may be NULL.
    public func decode<T: PostgresDecodable>(_ column: String, as type: T?.Type) throws(PGError) -> T? {
        guard let cell = self[column] else { throw Self.missing(column, storage.columns) }
        if cell.isNull { return nil }
        return try cell.decode(T.self)
    }

    /// Decodes a non-NULL column by index.
    public func decode<T: PostgresDecodable>(at column: Int, as type: T.Type = T.self) throws(PGError) -> T {
        guard let cell = self[column] else { throw Self.missing("#\(column)", storage.columns) }
        return try cell.decode(T.self)
    }

    /// Decodes a column that may be NULL, by index.
    public func decode<T: PostgresDecodable>(at column: Int, as type: T?.Type) throws(PGError) -> T? {
        guard let cell = self[column] else { throw Self.missing("#\(column)", storage.columns) }
        if cell.isNull { return nil }
        return try cell.decode(T.self)
    }

    private static func missing(_ column: String, _ columns: [String]) -> PGError {
        PGError(code: .decoding, message: "no column \"\(column)\" in result (columns: \(columns.joined(separator: ", ")))")
    }
}

/// One value of a result row: the column's name and type OID, and its binary-format bytes.
public struct PostgresCell: Sendable {
    /// The column's name.
    public let column: String
    /// The column's type OID.
    public let typeOID: UInt32
    /// The value in binary format; nil for NULL.
    public let bytes: ArraySlice<UInt8>?

    /// True for SQL NULL.
    public var isNull: Bool { bytes == nil }

    /// The column's type name, for error messages.
    public var typeName: String { OID.name(typeOID) }

    /// Decodes a non-NULL value.
    public func decode<T: PostgresDecodable>(_ type: T.Type) throws(PGError) -> T {
        guard let bytes else {
            throw PGError(code: .decoding, message: "column \"\(column)\" (\(typeName)) is NULL; decode as \(T.self)? to allow NULL")
        }
        return try T.decode(from: bytes, typeOID: typeOID, column: column)
    }

    /// The error every decoder throws on a type mismatch or malformed value.
    public func mismatch(_ swiftType: Any.Type, _ reason: String = "") -> PGError {
        PGError.decodingMismatch(column: column, typeOID: typeOID, swiftType: swiftType, reason: reason)
    }
}

extension PGError {
    static func decodingMismatch(column: String, typeOID: UInt32, swiftType: Any.Type, reason: String = "") -> PGError {
        PGError(code: .decoding, message: "column \"\(column)\" of type \(OID.name(typeOID)) cannot be decoded as \(swiftType)"
            + (reason.isEmpty ? "" : ": \(reason)"))
    }
}

/// A Swift type that can be read from a binary-format result value.
public protocol PostgresDecodable: Sendable {
    /// Decodes `bytes` (never NULL) of a column of type `typeOID`; throws a `.decoding` error naming
    /// `column` on mismatch.
    static func decode(from bytes: ArraySlice<UInt8>, typeOID: UInt32, column: String) throws(PGError) -> Self
}

/// Bounds-checked big-endian reads over network bytes: a short value is an error, never a trap.
struct ByteReader {
    var bytes: ArraySlice<UInt8>
    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    mutating func read<T: FixedWidthInteger>(_: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard bytes.count >= size else { return nil }
        var value: T = 0
        for byte in bytes.prefix(size) { value = (value << 8) | T(truncatingIfNeeded: byte) }
        bytes = bytes.dropFirst(size)
        return value
    }

    mutating func read(count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0 && bytes.count >= count else { return nil }
        let slice = bytes.prefix(count)
        bytes = bytes.dropFirst(count)
        return slice
    }
}

func readInteger(_ bytes: ArraySlice<UInt8>, typeOID: UInt32, column: String, as swiftType: Any.Type) throws(PGError) -> Int64 {
    var r = ByteReader(bytes)
    let value: Int64?
    switch (typeOID, bytes.count) {
    case (OID.int8, 8): value = r.read(Int64.self)
    case (OID.int4, 4): value = r.read(Int32.self).map(Int64.init)
    case (OID.int2, 2): value = r.read(Int16.self).map(Int64.init)
    case (OID.oid, 4): value = r.read(UInt32.self).map(Int64.init)
    default: value = nil
    }
    guard let value else { throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: swiftType) }
    return value
}

extension Int64: PostgresDecodable {
    /// From `int2`, `int4`, `int8` or `oid`.
    public static func decode(from bytes: ArraySlice<UInt8>, typeOID: UInt32, column: String) throws(PGError) -> Int64 {
        try readInteger(bytes, typeOID: typeOID, column: column, as: Int64.self)
    }
}

extension Int: PostgresDecodable {
    /// From `int2`, `int4`, `int8` or `oid`.
    public static func decode(from bytes: ArraySlice<UInt8>, typeOID: UInt32, column: String) throws(PGError) -> Int {
        Int(try readInteger(bytes, typeOID: typeOID, column: column, as: Int.self))
    }
}

extension Int32: PostgresDecodable {
    /// From `int2`, `int4`, or an `int8` whose value fits.
    public static func decode(from bytes: ArraySlice<UInt8>, typeOID: UInt32, column: String) throws(PGError) -> Int32 {
        let wide = try readInteger(bytes, typeOID: typeOID, column: column, as: Int32.self)
        guard let value = Int32(exactly: wide) else {
            throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: Int32.self, reason: "\(wide) out of range")
        }
        return value
    }
}

extension Bool: PostgresDecodable {
    /// From `bool`.
    public static func decode(from bytes: ArraySlice<UInt8>, typeOID: UInt32, column: String) throws(PGError) -> Bool {
        guard typeOID == OID.bool, bytes.count == 1, let b = bytes.first else {
            throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: Bool.self)
        }
        return b != 0
    }
}

extension Double: PostgresDecodable {
    /// From `float8` or `float4`.
    public static func decode(from bytes: ArraySlice<UInt8>, typeOID: UInt32, column: String) throws(PGError) -> Double {
        var r = ByteReader(bytes)
        switch (typeOID, bytes.count) {
        case (OID.float8, 8): if let bits = r.read(UInt64.self) { return Double(bitPattern: bits) }
        case (OID.float4, 4): if let bits = r.read(UInt32.self) { return Double(Float(bitPattern: bits)) }
        default: break
        }
        throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: Double.self)
    }
}

extension String: PostgresDecodable {
    /// From `text`, `varchar`, `bpchar`, `name`, `json`, `unknown`, or `jsonb` (whose binary form is a
    /// version byte 1 followed by the JSON text).
    public static func decode(from bytes: ArraySlice<UInt8>, typeOID: UInt32, column: String) throws(PGError) -> String {
        switch typeOID {
        case OID.text, OID.varchar, OID.bpchar, OID.name, OID.json, OID.unknown:
            return String(decoding: bytes, as: UTF8.self)
        case OID.jsonb:
            guard bytes.first == 1 else {
                throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: String.self, reason: "unknown jsonb version")
            }
            return String(decoding: bytes.dropFirst(), as: UTF8.self)
        default:
            throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: String.self)
        }
    }
}

extension UUID: PostgresDecodable {
    /// From `uuid` (16 bytes).
    public static func decode(from bytes: ArraySlice<UInt8>, typeOID: UInt32, column: String) throws(PGError) -> UUID {
        guard typeOID == OID.uuid, bytes.count == 16 else {
            throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: UUID.self)
        }
        let b = Array(bytes)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                           b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }
}

extension Date: PostgresDecodable {
    /// From `timestamptz` or `timestamp` (taken as UTC): microseconds since 2000-01-01.
    /// `infinity`/`-infinity` map to `distantFuture`/`distantPast`.
    public static func decode(from bytes: ArraySlice<UInt8>, typeOID: UInt32, column: String) throws(PGError) -> Date {
        var r = ByteReader(bytes)
        guard typeOID == OID.timestamptz || typeOID == OID.timestamp, bytes.count == 8, let micros = r.read(Int64.self) else {
            throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: Date.self)
        }
        if micros == Int64.max { return .distantFuture }
        if micros == Int64.min { return .distantPast }
        // Split whole seconds from microseconds so large values keep microsecond precision.
        let seconds = micros / 1_000_000
        let rest = micros % 1_000_000
        return Date(timeIntervalSince1970: Double(seconds) + postgresEpochOffsetSeconds + Double(rest) / 1_000_000)
    }
}

extension Array: PostgresDecodable where Element: PostgresDecodable {
    /// `[UInt8]` from `bytea`, `jsonb` (JSON text without the version byte) or text types;
    /// other element types from a one-dimensional array without NULL elements (array_recv layout).
    public static func decode(from bytes: ArraySlice<UInt8>, typeOID: UInt32, column: String) throws(PGError) -> [Element] {
        if Element.self == UInt8.self {
            let raw: ArraySlice<UInt8>
            switch typeOID {
            case OID.bytea, OID.text, OID.varchar, OID.json: raw = bytes
            case OID.jsonb where bytes.first == 1: raw = bytes.dropFirst()
            default: throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: [Element].self)
            }
            guard let result = [UInt8](raw) as Any as? [Element] else {
                throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: [Element].self)
            }
            return result
        }
        var r = ByteReader(bytes)
        guard let ndim = r.read(Int32.self), let _ = r.read(Int32.self), let elementOID = r.read(UInt32.self) else {
            throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: [Element].self, reason: "not an array")
        }
        if ndim == 0 { return [] }
        guard ndim == 1, let count = r.read(Int32.self), let _ = r.read(Int32.self), count >= 0 else {
            throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: [Element].self, reason: "only one-dimensional arrays")
        }
        var result: [Element] = []
        result.reserveCapacity(Int(Swift.min(count, 4096)))
        for _ in 0..<count {
            guard let length = r.read(Int32.self) else {
                throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: [Element].self, reason: "truncated")
            }
            guard length >= 0 else {
                throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: [Element].self, reason: "NULL element")
            }
            guard let element = r.read(count: Int(length)) else {
                throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: [Element].self, reason: "truncated")
            }
            result.append(try Element.decode(from: element, typeOID: elementOID, column: column))
        }
        return result
    }
}

extension UInt8: PostgresDecodable {
    /// Only so that `[UInt8]` decodes (as `bytea`); a single byte decodes from a `bytea` of length 1.
    public static func decode(from bytes: ArraySlice<UInt8>, typeOID: UInt32, column: String) throws(PGError) -> UInt8 {
        guard bytes.count == 1, let b = bytes.first else {
            throw .decodingMismatch(column: column, typeOID: typeOID, swiftType: UInt8.self)
        }
        return b
    }
}

/// A result copied out of a `PGresult`: all values in one byte buffer, with per-cell offsets.
final class ResultStorage: Sendable {
    let columns: [String]
    let types: [UInt32]
    let rowCount: Int
    let affectedRows: Int
    /// Concatenated cell bytes.
    let data: [UInt8]
    /// Per cell (row-major): start offset into `data` and length, or length -1 for NULL.
    let starts: [Int]
    let lengths: [Int32]

    init(columns: [String], types: [UInt32], rowCount: Int, affectedRows: Int, data: [UInt8], starts: [Int], lengths: [Int32]) {
        self.columns = columns
        self.types = types
        self.rowCount = rowCount
        self.affectedRows = affectedRows
        self.data = data
        self.starts = starts
        self.lengths = lengths
    }

    static let empty = ResultStorage(columns: [], types: [], rowCount: 0, affectedRows: 0, data: [], starts: [], lengths: [])

    func columnIndex(_ name: String) -> Int? { columns.firstIndex(of: name) }

    func cell(row: Int, column: Int) -> PostgresCell {
        let i = row * columns.count + column
        let length = lengths[i]
        let bytes: ArraySlice<UInt8>? = length < 0 ? nil : data[starts[i]..<(starts[i] + Int(length))]
        return PostgresCell(column: columns[column], typeOID: types[column], bytes: bytes)
    }
}
