public import Primitives

/// Why an outbound request failed. `description` is safe to log (no header values, no bodies);
/// details from the socket or TLS layer are in `debugDescription`.
public struct HTTPClientError: DetailedError, Sendable {
    /// Stable, extensible error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case invalidRequest, connect, tls, timeout, io, protocolError, tooLarge, serverUnavailable, addressNotAllowed }
        private let base: Base
        private init(_ base: Base) { self.base = base }
        /// The request cannot be sent (bad URL, CR/LF in a header).
        public static let invalidRequest = Code(.invalidRequest)
        /// Name resolution or TCP connect failed (including the connect timeout).
        public static let connect = Code(.connect)
        /// The TLS handshake failed or the server's certificate was refused (untrusted, wrong host name).
        public static let tls = Code(.tls)
        /// No response byte arrived within the read timeout.
        public static let timeout = Code(.timeout)
        /// The connection broke or closed before the response was complete.
        public static let io = Code(.io)
        /// The response violates HTTP/1.1 framing or syntax (RFC 9112).
        public static let protocolError = Code(.protocolError)
        /// The response exceeds a configured limit (head bytes, header count, body bytes).
        public static let tooLarge = Code(.tooLarge)
        /// The server answered 5xx or 429 and the retry policy gave up; `response` holds the last answer.
        public static let serverUnavailable = Code(.serverUnavailable)
        /// Every address the host resolved to was refused by `Configuration.allowAddress` (e.g. a private
        /// network address for a webhook: SSRF).
        public static let addressNotAllowed = Code(.addressNotAllowed)
        /// The code's stable name.
        public var description: String { base.rawValue }
    }

    /// What kind of failure.
    public var code: Code
    /// Safe explanation.
    public var reason: String
    /// Lower-layer detail (errno, OpenSSL queue).
    public var debugDetail: String
    /// Attempts made (retries included) when the error ends `send`.
    public var attempts: Int
    /// The last response, for `.serverUnavailable`.
    public var response: HTTPClientResponse?

    /// An error with no response attached.
    public init(_ code: Code, _ reason: String, debugDetail: String = "", attempts: Int = 1, response: HTTPClientResponse? = nil) {
        self.code = code
        self.reason = reason
        self.debugDetail = debugDetail
        self.attempts = attempts
        self.response = response
    }

    /// Whether the failure happened on the network, before a complete response (a retry may succeed).
    public var isNetworkFailure: Bool { code == .connect || code == .timeout || code == .io }

    /// `code: reason`.
    public var description: String { "\(code): \(reason)" + (attempts > 1 ? " (after \(attempts) attempts)" : "") }
}
