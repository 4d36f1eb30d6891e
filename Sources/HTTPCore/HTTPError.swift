import JSON

/// One entry of an error's `details`: which input (a JSON path, array indices as strings) and what is wrong with
/// it; `step` names the verification step that failed (`format`, `header`, `chain`, `signature`, `claims`).
public struct ErrorDetail: Sendable, Equatable {
    /// Where the problem is, e.g. `["signed_transaction_info"]`; empty for the body as a whole.
    public var path: [String]
    /// What is wrong, safe to show a client.
    public var message: String
    /// The verification step that rejected the input, for signed-data failures only.
    public var step: String?

    /// A detail; `step` only for verification failures.
    public init(path: [String], message: String, step: String? = nil) {
        self.path = path
        self.message = message
        self.step = step
    }
}

/// The one error every layer throws or returns: the event loop, the server core, the API and the executable.
///
/// It is the only author of an error body, `{"error","code","suggestion","details"?,"request_id"}`: handlers
/// throw it and the server renders it with the request id (equal to the `X-Request-Id` header). Every field is
/// shown to the client, so it must never carry internals; causes go to the log where the error is mapped.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    /// Status code, 400–599.
    public var status: Int
    /// Stable machine-readable code, e.g. `VALIDATION_ERROR` (listed in openapi.yaml's Error schema).
    public var code: String
    /// Human message, the body's `error`.
    public var message: String
    /// What the caller can do about it.
    public var suggestion: String
    /// Per-input problems; `details` is omitted from the body when empty.
    public var details: [ErrorDetail]
    /// Extra header fields, e.g. `Allow`, `WWW-Authenticate`, `Retry-After`, `RateLimit-*`.
    public var headers: HTTPHeaders

    /// An error. A 503 without its own `Retry-After` gets the server's `retryAfterSeconds` when rendered.
    public init(
        status: Int, code: String, message: String, suggestion: String, details: [ErrorDetail] = [],
        headers: HTTPHeaders = .init()
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.suggestion = suggestion
        self.details = details
        self.headers = headers
    }

    /// `status code: message`, safe for clients like every field.
    public var description: String { "\(status) \(code): \(message)" }

    /// What any error that is not an `HTTPError` becomes: no internals, only the request id to report.
    public static let internalError = HTTPError(
        status: 500, code: "INTERNAL_ERROR", message: "Internal server error.",
        suggestion: "Retry later; if it persists, report the request_id to the operator.")

    /// The server is temporarily unable to answer (overload, draining, a dependency down); never a verdict.
    public static func serviceUnavailable(
        code: String = "SERVICE_UNAVAILABLE", message: String, suggestion: String
    ) -> HTTPError {
        HTTPError(status: 503, code: code, message: message, suggestion: suggestion)
    }

    /// The response for this error: the only code that writes an error body. `Retry-After` comes from the
    /// server's configuration (one source for every 503) unless the error set its own (a 429's bucket refill).
    func response(requestID: String, retryAfterSeconds: Int) -> Response {
        var body = JSONWriter(reservingCapacity: 192)
        body.writeRaw(#"{"error":"#)
        body.writeString(message)
        body.writeRaw(#","code":"#)
        body.writeString(code)
        body.writeRaw(#","suggestion":"#)
        body.writeString(suggestion)
        if !details.isEmpty {
            body.writeRaw(#","details":["#)
            for (i, detail) in details.enumerated() {
                if i > 0 { body.writeRaw(",") }
                body.writeRaw(#"{"path":["#)
                for (j, segment) in detail.path.enumerated() {
                    if j > 0 { body.writeRaw(",") }
                    body.writeString(segment)
                }
                body.writeRaw(#"],"message":"#)
                body.writeString(detail.message)
                if let step = detail.step {
                    body.writeRaw(#","step":"#)
                    body.writeString(step)
                }
                body.writeRaw("}")
            }
            body.writeRaw("]")
        }
        body.writeRaw(#","request_id":"#)
        body.writeString(requestID)
        body.writeRaw("}")
        var headers = self.headers
        if status == 503, !headers.contains("Retry-After") { headers.set("Retry-After", String(retryAfterSeconds)) }
        return .json(status, body.bytes, headers: headers)
    }
}
