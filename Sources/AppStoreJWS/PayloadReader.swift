import Foundation
import JSON
import Primitives

/// Typed, strict field access over a decoded payload object. Unknown keys are ignored; a known key
/// with the wrong JSON type is a format error naming the field (null counts as absent).
struct PayloadReader {
    /// The members by key, hashed once: a typed decode asks for ~35 keys, and `JSONObject` scans
    /// small objects linearly (hundreds of string comparisons per payload on the hot path).
    let members: [String: JSONValue]
    /// Prefix for field names in reasons, e.g. `data.` for a notification's data object.
    let path: String

    init(_ object: JSONObject, path: String = "") {
        var members = [String: JSONValue](minimumCapacity: object.count)
        for (key, value) in object where members[key] == nil { members[key] = value }
        self.members = members
        self.path = path
    }

    private func present(_ key: String) -> JSONValue? {
        guard let value = members[key], !value.isNull else { return nil }
        return value
    }

    private func wrongType(_ key: String, _ expected: String) -> VerificationError {
        .format(.payload, "payload field \(path)\(key) must be \(expected)")
    }

    func missing(_ key: String) -> VerificationError {
        .format(.payload, "payload field \(path)\(key) is required but missing")
    }

    func string(_ key: String) throws(VerificationError) -> String? {
        guard let value = present(key) else { return nil }
        guard let string = value.stringValue else { throw wrongType(key, "a string") }
        // Signed or not, U+0000 has no place in an App Store field, and PostgreSQL text cannot store it.
        guard string.utf8Offset(of: 0) == nil else { throw .format(.payload, "payload field \(path)\(key) contains U+0000") }
        return string
    }

    /// A required string must also be non-empty: an empty id or bundle would key rows to nothing.
    func requiredString(_ key: String) throws(VerificationError) -> String {
        guard let value = try string(key) else { throw missing(key) }
        guard !value.isEmpty else { throw .format(.payload, "payload field \(path)\(key) must not be empty") }
        return value
    }

    func int64(_ key: String) throws(VerificationError) -> Int64? {
        guard let value = present(key) else { return nil }
        guard let number = value.int64Value else { throw wrongType(key, "an integer") }
        return number
    }

    func bool(_ key: String) throws(VerificationError) -> Bool? {
        guard let value = present(key) else { return nil }
        guard let flag = value.boolValue else { throw wrongType(key, "a boolean") }
        return flag
    }

    /// Apple dates: milliseconds since the epoch; fractional values (Xcode) are truncated to the ms. Only instants
    /// of `SignedDateRange`: anything else is refused here, before it can reach a `Date` or the database.
    func milliseconds(_ key: String) throws(VerificationError) -> Int64? {
        guard let value = present(key) else { return nil }
        guard let ms = value.millisecondsValue else { throw .invalidDate(path + key, isNumber: false) }
        guard SignedDateRange.contains(ms) else { throw .invalidDate(path + key) }
        return ms
    }

    func date(_ key: String) throws(VerificationError) -> Date? {
        try milliseconds(key).map(Date.init(appleMilliseconds:))
    }

    func requiredDate(_ key: String) throws(VerificationError) -> Date {
        guard let value = try date(key) else { throw missing(key) }
        return value
    }

    func strings(_ key: String) throws(VerificationError) -> [String]? {
        guard let value = present(key) else { return nil }
        guard let array = value.arrayValue else { throw wrongType(key, "an array of strings") }
        var result: [String] = []
        for element in array {
            guard let string = element.stringValue else { throw wrongType(key, "an array of strings") }
            result.append(string)
        }
        return result
    }

    /// An array of at most `maxCount` strings of 1 to `maxBytes` UTF-8 bytes each: a list a row stores and every
    /// answer shows, so a signed but hostile payload cannot make it grow without bound.
    func boundedStrings(_ key: String, maxCount: Int, maxBytes: Int) throws(VerificationError) -> [String]? {
        guard let strings = try strings(key) else { return nil }
        guard strings.count <= maxCount else {
            throw .format(.payload, "payload field \(path)\(key) must hold at most \(maxCount) strings")
        }
        for string in strings where string.isEmpty || string.utf8.count > maxBytes || string.utf8Offset(of: 0) != nil {
            throw .format(.payload, "payload field \(path)\(key) must hold strings of 1 to \(maxBytes) bytes")
        }
        return strings
    }

    /// The object under `key` decoded by `decode`, whose reader names its fields `key.field` (nil when absent).
    func nested<T>(_ key: String, _ decode: (PayloadReader) throws(VerificationError) -> T) throws(VerificationError)
        -> T? {
        guard let value = present(key) else { return nil }
        guard let object = value.objectValue else { throw wrongType(key, "an object") }
        return try decode(PayloadReader(object, path: path + key + "."))
    }

    /// Passed through untouched (newer, loosely specified objects such as `advancedCommerceInfo`).
    func raw(_ key: String) -> JSONValue? { present(key) }
}

extension Date {
    /// A date from Apple's integer milliseconds since the Unix epoch.
    init(appleMilliseconds ms: Int64) {
        self.init(timeIntervalSince1970: Double(ms) / 1000)
    }
}
