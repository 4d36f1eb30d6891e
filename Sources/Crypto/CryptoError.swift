public import Primitives

/// A cryptographic or TLS operation failed: a key that cannot be parsed, a ciphertext that does not authenticate,
/// an OpenSSL call that refused, a handshake or certificate the peer got wrong. `description` is safe to show; OpenSSL's own text is in `debugDescription`.
public struct CryptoError: DetailedError, Sendable {
    /// Stable, extensible error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case invalidKey, unsupportedKey, invalidInput, authenticationFailed, unsupportedFormat, internalFailure
            case configuration, handshakeFailed, certificateRejected, timeout, closed, io
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }
        /// Key material that is not a parseable key (bad PEM, wrong length).
        public static let invalidKey = Code(.invalidKey)
        /// A parseable key of the wrong type or curve (e.g. an RSA or P-384 key where P-256 is required).
        public static let unsupportedKey = Code(.unsupportedKey)
        /// Input bytes of the wrong shape (a malformed signature, a truncated sealed box).
        public static let invalidInput = Code(.invalidInput)
        /// AES-GCM tag mismatch: wrong key, wrong AAD or tampered bytes (deliberately not told apart).
        public static let authenticationFailed = Code(.authenticationFailed)
        /// A sealed box with an unknown format version.
        public static let unsupportedFormat = Code(.unsupportedFormat)
        /// OpenSSL failed where it should not (allocation, provider lookup).
        public static let internalFailure = Code(.internalFailure)
        /// TLS: the context could not be built (unreadable CA file, bad key).
        public static let configuration = Code(.configuration)
        /// TLS: the handshake failed for a reason other than the peer's certificate (protocol, version, alert).
        public static let handshakeFailed = Code(.handshakeFailed)
        /// TLS: the peer's certificate did not verify: untrusted, expired, or not for this host name.
        public static let certificateRejected = Code(.certificateRejected)
        /// TLS: a deadline passed.
        public static let timeout = Code(.timeout)
        /// TLS: the peer closed the connection where data was required.
        public static let closed = Code(.closed)
        /// TLS: a socket or record-layer error.
        public static let io = Code(.io)
        /// The code's stable name.
        public var description: String { base.rawValue }
    }

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
