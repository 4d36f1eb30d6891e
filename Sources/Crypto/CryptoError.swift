public import Primitives

/// A cryptographic or TLS operation failed: a key that cannot be parsed, a ciphertext that does not authenticate,
/// an OpenSSL call that refused, a handshake or certificate the peer got wrong. `description` is safe to show; OpenSSL's own text is in `debugDescription`.
public struct CryptoError: DetailedError, Sendable {
    /// Stable, extensible error code.
    /// An open vocabulary (`OpenValue`, one author of the idiom); its known values are the extension's static members.
    public typealias Code = OpenValue<CodeTag, String>
    /// Tells `CryptoError.Code` apart from the other open vocabularies.
    public enum CodeTag {}

    /// What kind of failure.
    public var code: Code
    /// Client-safe explanation (for `.certificateRejected`, OpenSSL's verify result text).
    public var reason: String
    /// OpenSSL's drained error queue at the failure site (internals: logs only).
    public var debugDetail: String

    /// Captures OpenSSL's error queue unless `debugDetail` is given.
    init(_ code: Code, _ reason: String, debugDetail: String? = nil) {
        self.code = code
        self.reason = reason
        self.debugDetail = debugDetail ?? OpenSSLErrors.drain()
    }

    /// `code: reason`.
    public var description: String { "\(code): \(reason)" }
}

extension CryptoError.Code {
    /// Key material that is not a parseable key (bad PEM, wrong length).
    public static let invalidKey = Self(rawValue: "invalidKey")
    /// A parseable key of the wrong type or curve (e.g. an RSA or P-384 key where P-256 is required).
    public static let unsupportedKey = Self(rawValue: "unsupportedKey")
    /// Input bytes of the wrong shape (a malformed signature, a truncated sealed box).
    public static let invalidInput = Self(rawValue: "invalidInput")
    /// AES-GCM tag mismatch: wrong key, wrong AAD or tampered bytes (deliberately not told apart).
    public static let authenticationFailed = Self(rawValue: "authenticationFailed")
    /// A sealed box with an unknown format version.
    public static let unsupportedFormat = Self(rawValue: "unsupportedFormat")
    /// OpenSSL failed where it should not (allocation, provider lookup).
    public static let internalFailure = Self(rawValue: "internalFailure")
    /// TLS: the context could not be built (unreadable CA file, bad key).
    public static let configuration = Self(rawValue: "configuration")
    /// TLS: the handshake failed for a reason other than the peer's certificate (protocol, version, alert).
    public static let handshakeFailed = Self(rawValue: "handshakeFailed")
    /// TLS: the peer's certificate did not verify: untrusted, expired, or not for this host name.
    public static let certificateRejected = Self(rawValue: "certificateRejected")
    /// TLS: a deadline passed.
    public static let timeout = Self(rawValue: "timeout")
    /// TLS: the peer closed the connection where data was required.
    public static let closed = Self(rawValue: "closed")
    /// TLS: a socket or record-layer error.
    public static let io = Self(rawValue: "io")
}
