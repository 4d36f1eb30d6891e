/// Any JSON value, as parsed by `JSONParser` or built in code (it is expressible by literals:
/// `let body: JSONValue = ["ok": true, "ids": [1, 2], "next": nil]`).
public enum JSONValue: Sendable, Equatable {
    /// `null`
    case null
    /// `true` / `false`
    case bool(Bool)
    /// A number, kept as its literal text.
    case number(JSONNumber)
    /// A string (always valid Unicode).
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object with unique keys, in document order.
    case object(JSONObject)

    /// An integer number.
    public init(_ value: Int) { self = .number(JSONNumber(value)) }

    /// An integer number.
    public init(_ value: Int64) { self = .number(JSONNumber(value)) }

    /// A floating-point number, or `null` for NaN/infinity (JSON has no such numbers).
    public init(_ value: Double) {
        if let number = JSONNumber(value) { self = .number(number) } else { self = .null }
    }

    /// The member `key` if this is an object that has it, else `nil`.
    /// Chains with optionals: `payload["data"]?["bundleId"]?.stringValue`.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }

    /// Element `index` if this is an array and the index is in bounds, else `nil` (never traps).
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    /// The boolean, if this is `true` or `false`.
    public var boolValue: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    /// The number, if this is a number.
    public var numberValue: JSONNumber? {
        guard case .number(let value) = self else { return nil }
        return value
    }

    /// The number as an exact `Int64` (see `JSONNumber.int64Value`), if this is such a number.
    public var int64Value: Int64? { numberValue?.int64Value }

    /// The number as Apple milliseconds (see `JSONNumber.millisecondsValue`), if this is a number.
    public var millisecondsValue: Int64? { numberValue?.millisecondsValue }

    /// The number as a finite `Double` (see `JSONNumber.doubleValue`), if this is a number.
    public var doubleValue: Double? { numberValue?.doubleValue }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        guard case .array(let value) = self else { return nil }
        return value
    }

    /// The object, if this is an object.
    public var objectValue: JSONObject? {
        guard case .object(let value) = self else { return nil }
        return value
    }

    /// True for `null` only (not for a missing key: that is `nil`).
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

extension JSONValue: CustomStringConvertible {
    /// Compact JSON text.
    public var description: String { serializedString() }
}

extension JSONValue: ExpressibleByNilLiteral {
    /// `nil` → `null`.
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    /// `true` / `false`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    /// An integer number.
    public init(integerLiteral value: Int64) { self = .number(JSONNumber(value)) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    /// A floating-point number; a literal that overflows `Double` becomes `null`.
    public init(floatLiteral value: Double) { self.init(value) }
}

extension JSONValue: ExpressibleByStringLiteral {
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// An object in written order; a repeated key replaces the earlier value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
}
