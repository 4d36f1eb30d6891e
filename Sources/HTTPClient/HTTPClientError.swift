public import Primitives

/// Why an outbound request failed. `description` is safe to log (no header values, no bodies);
/// details from the socket or TLS layer are in `debugDescription`.
public struct HTTPClientError: DetailedError, Sendable {
    /// Stable, extensible error code.
    /// An open vocabulary (`OpenValue`, one author of the idiom); its known values are the extension's static members.
    public typealias Code = OpenValue<CodeTag, String>
    /// Tells `HTTPClientError.Code` apart from the other open vocabularies.
    public enum CodeTag {}

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

extension HTTPClientError.Code {
    /// The request cannot be sent (bad URL, CR/LF in a header).
    public static let invalidRequest = Self(rawValue: "invalidRequest")
    /// Name resolution or TCP connect failed (including the connect timeout).
    public static let connect = Self(rawValue: "connect")
    /// The TLS handshake failed or the server's certificate was refused (untrusted, wrong host name).
    public static let tls = Self(rawValue: "tls")
    /// No response byte arrived within the read timeout.
    public static let timeout = Self(rawValue: "timeout")
    /// The connection broke or closed before the response was complete.
    public static let io = Self(rawValue: "io")
    /// The response violates HTTP/1.1 framing or syntax (RFC 9112).
    public static let protocolError = Self(rawValue: "protocolError")
    /// The response exceeds a configured limit (head bytes, header count, body bytes).
    public static let tooLarge = Self(rawValue: "tooLarge")
    /// The server answered 5xx or 429 and the retry policy gave up; `response` holds the last answer.
    public static let serverUnavailable = Self(rawValue: "serverUnavailable")
    /// Every address the host resolved to was refused by `Configuration.allowAddress` (e.g. a private
    /// network address for a webhook: SSRF).
    public static let addressNotAllowed = Self(rawValue: "addressNotAllowed")
}
