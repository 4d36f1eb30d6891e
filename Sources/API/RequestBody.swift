import Domain
import HTTPCore
import JSON

/// Reading a JSON request body: media type, syntax, then field by field with every problem collected.
enum RequestBody {
    /// API bodies are small (a JWS with its certificate chain is ~5 KiB); tight limits bound parse work.
    static let limits = JSONParser.Limits(maxDepth: 16, maxBytes: 256 * 1024, maxStringBytes: 128 * 1024,
                                          maxNumberBytes: 64)

    /// The body as a JSON object, after checking `Content-Type` (RFC 9110 §8.3.1: media types are
    /// case-insensitive and may carry parameters such as `; charset=utf-8`).
    static func object(_ request: Request, suggestion: String) throws(APIError) -> JSONObject {
        guard isJSON(request.headers["Content-Type"]) else {
            throw APIError.unsupportedContentType(suggestion: suggestion)
        }
        let value: JSONValue
        do throws(JSONError) {
            value = try JSONParser.parse(request.body, limits: limits)
        } catch {
            throw APIError.invalidJSON(error, suggestion: suggestion)
        }
        guard case .object(let object) = value else {
            throw APIError.validation([ValidationDetail(path: [], message: "Expected object")], suggestion: suggestion)
        }
        return object
    }

    /// Whether a `Content-Type` value names `application/json`, ignoring case, whitespace and parameters.
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let expected = Array("application/json".utf8)
        var bytes = contentType.utf8[...]
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes = bytes.dropFirst() }
        var i = 0
        for byte in bytes {
            if i == expected.count {
                // Only optional whitespace, then parameters, may follow the media type.
                return byte == UInt8(ascii: ";") || byte == 0x20 || byte == 0x09
            }
            let lower = (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
            guard lower == expected[i] else { return false }
            i += 1
        }
        return i == expected.count
    }
}

/// Checks the fields of one JSON object against the contract, collecting every problem with its path
/// (zod-style messages, as the API has always answered). Unknown fields are ignored.
struct FieldValidator {
    private(set) var details: [ValidationDetail] = []
    let object: JSONObject

    init(_ object: JSONObject) { self.object = object }

    /// Throws `VALIDATION_ERROR` with every problem found, if any.
    func check(suggestion: String) throws(APIError) {
        if !details.isEmpty { throw APIError.validation(details, suggestion: suggestion) }
    }

    mutating func fail(_ path: [String], _ message: String) {
        details.append(ValidationDetail(path: path, message: message))
    }

    /// Adds the problems a use case's rules found (`ProjectRules`), after the ones found here.
    mutating func add(_ problems: [FieldProblem]) {
        details += problems.map { ValidationDetail(path: $0.path, message: $0.message) }
    }

    /// Whether `key` is present and was read without a problem (so a rule check on its value is meaningful).
    func parsed(_ key: String) -> Bool {
        has(key) && !details.contains { $0.path.first == key }
    }

    /// Whether the object has `key` at all (for partial updates, where `null` may mean "clear").
    func has(_ key: String) -> Bool { object.contains(key: key) }

    /// A string field, length counted in Unicode scalars as JSON Schema does.
    mutating func string(_ key: String, required: Bool, minLength: Int = 1, maxLength: Int? = nil) -> String? {
        guard let value = object[key] else {
            if required { fail([key], "Required") }
            return nil
        }
        return checkString(value, path: [key], minLength: minLength, maxLength: maxLength)
    }

    mutating func checkString(_ value: JSONValue, path: [String], minLength: Int, maxLength: Int?) -> String? {
        guard case .string(let string) = value else {
            fail(path, "Expected string")
            return nil
        }
        // A scalar is 1–4 UTF-8 bytes, so the byte count settles both bounds except near them.
        let bytes = string.utf8.count
        let needsCount = bytes < minLength * 4 || (maxLength.map { bytes > $0 } ?? false)
        let scalars = needsCount ? string.unicodeScalars.count : bytes
        if scalars < minLength {
            fail(path, "String must contain at least \(minLength) character(s)")
            return nil
        }
        if let maxLength, scalars > maxLength {
            fail(path, "String must contain at most \(maxLength) character(s)")
            return nil
        }
        // PostgreSQL text cannot hold U+0000; refuse it here rather than fail in storage.
        if string.utf8.contains(0) {
            fail(path, "String must not contain NUL characters")
            return nil
        }
        return string
    }

    mutating func bool(_ key: String) -> Bool? {
        guard let value = object[key] else { return nil }
        guard case .bool(let flag) = value else {
            fail([key], "Expected boolean")
            return nil
        }
        return flag
    }

    /// An integer field that may be `null`: `.some(nil)` for an explicit `null`, `nil` when absent or invalid.
    mutating func nullableInt(_ key: String, minimum: Int64) -> Int64?? {
        guard let value = object[key] else { return nil }
        if value.isNull { return .some(nil) }
        guard case .number(let number) = value, let int = number.int64Value else {
            fail([key], "Expected integer")
            return nil
        }
        guard int >= minimum else {
            fail([key], "Number must be greater than or equal to \(minimum)")
            return nil
        }
        return .some(int)
    }

    /// An integer field (not `null`); `nil` when absent or invalid.
    mutating func int(_ key: String) -> Int? {
        guard let value = object[key] else { return nil }
        guard case .number(let number) = value, let int = number.int64Value, let small = Int(exactly: int) else {
            fail([key], "Expected integer")
            return nil
        }
        return small
    }

    /// A string field restricted to `allowed`.
    mutating func enumeration(_ key: String, _ allowed: [String]) -> String? {
        guard let value = object[key] else { return nil }
        return checkEnum(value, path: [key], allowed)
    }

    mutating func checkEnum(_ value: JSONValue, path: [String], _ allowed: [String]) -> String? {
        guard case .string(let string) = value else {
            fail(path, "Expected string")
            return nil
        }
        guard allowed.contains(string) else {
            fail(path, "Invalid enum value. Expected " + allowed.map { "'\($0)'" }.joined(separator: " | "))
            return nil
        }
        return string
    }

    /// An array of strings, each checked by `element` (which reports its own problems at `[key, "i"]`).
    mutating func array(
        _ key: String, required: Bool, minItems: Int = 0, maxItems: Int? = nil,
        element: (inout FieldValidator, JSONValue, [String]) -> String?
    ) -> [String]? {
        guard let value = object[key] else {
            if required { fail([key], "Required") }
            return nil
        }
        guard case .array(let elements) = value else {
            fail([key], "Expected array")
            return nil
        }
        if elements.count < minItems {
            fail([key], "Array must contain at least \(minItems) element(s)")
            return nil
        }
        if let maxItems, elements.count > maxItems {
            fail([key], "Array must contain at most \(maxItems) element(s)")
            return nil
        }
        let before = details.count
        var out: [String] = []
        out.reserveCapacity(elements.count)
        for (i, item) in elements.enumerated() {
            if let string = element(&self, item, [key, String(i)]) { out.append(string) }
        }
        return details.count == before ? out : nil
    }
}
