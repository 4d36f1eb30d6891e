public import Foundation

/// Why a `BouncerClient` call failed: Bouncer's error body (status, `code`, `error`, `suggestion`, `details`,
/// `request_id`) or a failure before any answer arrived (transport, unreadable response, a missing secret key).
///
/// `description` is safe to show and log: it never contains a key.
public struct BouncerError: Error, Sendable, CustomStringConvertible {
    /// Which kind of failure; extensible, so new kinds do not break `switch` statements.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case server, transport, invalidResponse, invalidRequest, secretKeyMissing
        }
        private let base: Base

        /// Bouncer answered with an error status and body (`status`, `code` and the rest are set).
        public static let server = Kind(base: .server)
        /// No HTTP answer: connection refused, DNS, TLS, timeout (`underlying` holds the `URLError`).
        public static let transport = Kind(base: .transport)
        /// An answer that is not Bouncer's (unexpected status, or a body that does not decode).
        public static let invalidResponse = Kind(base: .invalidResponse)
        /// The client could not build the request (a base URL that does not take a path); nothing was sent.
        public static let invalidRequest = Kind(base: .invalidRequest)
        /// The call needs the project's secret key and the client was made without one; nothing was sent.
        public static let secretKeyMissing = Kind(base: .secretKeyMissing)

        /// e.g. `server`.
        public var description: String { base.rawValue }
    }

    /// One entry of `details`: which input is wrong and why.
    public struct Detail: Codable, Hashable, Sendable {
        /// JSON path of the input, e.g. `["signed_transaction_info"]`; empty for the body as a whole.
        public var path: [String]
        /// What is wrong.
        public var message: String
        /// The verification step that refused signed data (`format`, `header`, `chain`, `signature`, `claims`).
        public var step: String?

        /// A detail.
        public init(path: [String], message: String, step: String? = nil) {
            self.path = path
            self.message = message
            self.step = step
        }
    }

    /// Which kind of failure.
    public var kind: Kind
    /// The HTTP status, when an answer arrived.
    public var status: Int?
    /// Bouncer's stable code, e.g. `VALIDATION_ERROR`, `RATE_LIMITED`, `APPLE_UNAVAILABLE`.
    public var code: String?
    /// The human message (the body's `error`), or what went wrong locally.
    public var message: String
    /// What the caller can do about it.
    public var suggestion: String?
    /// Per-input problems (validation and verification errors).
    public var details: [Detail]
    /// The request id to quote to the operator (`request_id`, equal to the `X-Request-Id` header).
    public var requestId: String?
    /// Seconds the server asked to wait (`Retry-After`), when it sent one.
    public var retryAfter: TimeInterval?
    /// Requests sent for this call, retries included (0 when nothing was sent).
    public var attempts: Int
    /// The cause of a transport or decoding failure.
    public var underlying: (any Error)?

    /// An error; the client makes these, tests and wrappers may too.
    public init(kind: Kind, status: Int? = nil, code: String? = nil, message: String, suggestion: String? = nil,
                details: [Detail] = [], requestId: String? = nil, retryAfter: TimeInterval? = nil, attempts: Int = 0,
                underlying: (any Error)? = nil) {
        self.kind = kind
        self.status = status
        self.code = code
        self.message = message
        self.suggestion = suggestion
        self.details = details
        self.requestId = requestId
        self.retryAfter = retryAfter
        self.attempts = attempts
        self.underlying = underlying
    }

    /// Whether the same call may succeed later unchanged: 429, 503 and transport failures. Never a verdict on
    /// the purchase.
    public var isRetryable: Bool {
        kind == .transport || status == 429 || status == 503
    }

    /// e.g. `400 VALIDATION_ERROR: Validation failed. (request_id …)`.
    public var description: String {
        var text = status.map { "\($0) " } ?? ""
        text += code.map { "\($0): " } ?? "\(kind): "
        text += message
        if let requestId { text += " (request_id \(requestId))" }
        return text
    }
}

/// The error body every Bouncer error answer carries.
struct ErrorBody: Decodable {
    var error: String
    var code: String
    var suggestion: String?
    var details: [BouncerError.Detail]?
    var requestId: String?
}
