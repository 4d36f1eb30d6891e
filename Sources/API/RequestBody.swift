import Domain
import Foundation
import HTTPCore
import JSON
import Primitives

/// Reading a JSON request body: media type, syntax, then field by field with every problem collected.
enum RequestBody {
    /// API bodies are small (a JWS with its certificate chain is ~5 KiB); tight limits bound parse work.
    static let limits = JSONParser.Limits(maxDepth: 16, maxBytes: 256 * 1024, maxStringBytes: 128 * 1024,
                                          maxNumberBytes: 64)

    /// `POST /v1/receipts` also takes StoreKit 1 receipts (one base64 string of up to the route's body limit):
    /// the same limits, with the byte and string bounds raised to `maxBodyBytes` (the HTTP layer's bound already).
    static func receiptLimits(maxBodyBytes: Int) -> JSONParser.Limits {
        JSONParser.Limits(maxDepth: limits.maxDepth, maxBytes: max(limits.maxBytes, maxBodyBytes),
                          maxStringBytes: max(limits.maxStringBytes, maxBodyBytes), maxNumberBytes: limits.maxNumberBytes)
    }

    /// The body as a JSON object, after checking `Content-Type` (RFC 9110 §8.3.1: media types are
    /// case-insensitive and may carry parameters such as `; charset=utf-8`). A body sent without any
    /// `Content-Type` is read as JSON when it parses; a declared non-JSON media type is 415.
    static func object(_ request: Request, suggestion: String, limits: JSONParser.Limits = RequestBody.limits)
        throws(HTTPError) -> JSONObject
    {
        switch mediaType(request.headers["Content-Type"]) {
        case .json, .absent: break
        case .formURLEncoded: throw HTTPError.formURLEncodedBody
        case .other: throw HTTPError.unsupportedMediaType
        }
        let value: JSONValue
        do throws(JSONError) {
            value = try JSONParser.parse(request.body, limits: limits)
        } catch {
            throw HTTPError.invalidJSON(error, suggestion: suggestion)
        }
        guard case .object(let object) = value else {
            throw HTTPError.validation([ErrorDetail(path: [], message: "Expected object")], suggestion: suggestion)
        }
        return object
    }

    /// What a `Content-Type` says about the body.
    enum MediaType: Equatable {
        /// No `Content-Type` at all (e.g. a bare `curl --data-binary` or a minimal client): try JSON.
        case absent
        /// `application/json` or a structured-syntax `application/…+json` (RFC 6839 §3.1), with any parameters.
        case json
        /// What `curl -d` and HTML forms send.
        case formURLEncoded
        /// Anything else.
        case other
    }

    /// Classifies a `Content-Type` value, ignoring case, surrounding whitespace and parameters.
    static func mediaType(_ contentType: String?) -> MediaType {
        guard let contentType else { return .absent }
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        var bytes = contentType.utf8.prefix { $0 != UInt8(ascii: ";") }[...]
        while let first = bytes.first, isSpace(first) { bytes = bytes.dropFirst() }
        while let last = bytes.last, isSpace(last) { bytes = bytes.dropLast() }
        let lower = bytes.map { ($0 >= 0x41 && $0 <= 0x5A) ? $0 | 0x20 : $0 }
        let application = Array("application/".utf8)
        guard lower.starts(with: application) else { return .other }
        let subtype = lower.dropFirst(application.count)
        if subtype.elementsEqual("json".utf8) { return .json }
        if subtype.elementsEqual("x-www-form-urlencoded".utf8) { return .formURLEncoded }
        // `+json` after a non-empty, slash-free type name, e.g. `application/merge-patch+json`.
        if subtype.count > 5, subtype.suffix(5).elementsEqual("+json".utf8), !subtype.contains(UInt8(ascii: "/")) {
            return .json
        }
        return .other
    }

    /// Apple's `{"signedPayload": "…"}` (notifications, real-time retention requests): the JWS, checked only for
    /// its three parts here (the verifier checks the rest).
    static func signedPayload(_ request: Request, suggestion: String) throws -> String {
        var fields = try FieldValidator(request, suggestion: suggestion)
        let payload = fields.string("signedPayload", required: true)
        try fields.check(suggestion: suggestion)
        guard let payload, ReceiptsController.hasThreeParts(payload) else {
            throw VerificationFailure(code: .invalidJWSFormat, reason: "expected 3 dot-separated parts", step: "format")
        }
        return payload
    }

    /// Runs a use case, giving its `.invalidInput` problems this route's suggestion (the rules are the use case's,
    /// the words for this front end are ours).
    static func translating<T>(suggestion: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DomainError where error.code == .invalidInput {
            throw HTTPError.validation(error.details.map(ErrorDetail.init),
                                      suggestion: suggestion)
        }
    }
}

/// The path parameters several resources share, checked alike.
enum PathParameters {
    static let projectIdSuggestion = "Use the project's id (a UUID) from GET /v1/admin/projects."

    /// The `:id` of `/v1/admin/projects/:id/…`: 400 `VALIDATION_ERROR` unless a UUID.
    static func projectId(_ request: Request) throws(HTTPError) -> UUID {
        try uuid(request, "id", suggestion: projectIdSuggestion)
    }

    /// The `:userId` of an app's read, in the form the project's purchases are bound under
    /// (`AccountBindingRules.canonicalUserId`: a UUID reads as under `require_match` and `prefer`): 400
    /// `VALIDATION_ERROR` unless 1 to 256 characters.
    static func userId(_ request: Request, project: Project, suggestion: String) throws(HTTPError) -> String {
        let userId = AccountBindingRules.canonicalUserId(
            request.pathParameters["userId"] ?? "", policy: project.appAccountTokenPolicy)
        let scalars = userId.unicodeScalars.count
        guard scalars >= 1, scalars <= 256 else {
            throw HTTPError.validation(
                [ErrorDetail(path: ["userId"], message: scalars == 0
                    ? "String must contain at least 1 character(s)" : "String must contain at most 256 character(s)")],
                suggestion: suggestion)
        }
        return userId
    }
}


/// Checks the fields of one JSON object against the contract, collecting every problem with its path
/// (zod-style messages, as the API has always answered). Unknown fields are ignored.
struct FieldValidator {
    private(set) var details: [ErrorDetail] = []
    let object: JSONObject

    init(_ object: JSONObject) { self.object = object }

    /// The request's body as a JSON object (`RequestBody.object`), ready to be checked field by field.
    init(_ request: Request, suggestion: String) throws(HTTPError) {
        self.init(try RequestBody.object(request, suggestion: suggestion))
    }

    /// Throws `VALIDATION_ERROR` with every problem found, if any.
    func check(suggestion: String) throws(HTTPError) {
        if !details.isEmpty { throw HTTPError.validation(details, suggestion: suggestion) }
    }

    mutating func fail(_ path: [String], _ message: String) {
        details.append(ErrorDetail(path: path, message: message))
    }

    /// Adds the problems a use case's rules found (`ProjectRules`), after the ones found here.
    mutating func add(_ problems: [FieldProblem]) {
        details += problems.map(ErrorDetail.init)
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
        if Self.containsNUL(string) {
            fail(path, "String must not contain NUL characters")
            return nil
        }
        return string
    }

    /// Whether `string` holds U+0000.
    static func containsNUL(_ string: String) -> Bool {
        string.utf8Offset(of: 0) != nil
    }

    /// A UUID field (a string); `nil` when absent or invalid.
    mutating func uuid(_ key: String) -> UUID? {
        guard let value = object[key] else { return nil }
        return checkUUID(value, path: [key])
    }

    mutating func checkUUID(_ value: JSONValue, path: [String]) -> UUID? {
        guard let text = value.stringValue, let id = UUID(uuidString: text) else {
            fail(path, "Invalid uuid")
            return nil
        }
        return id
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
