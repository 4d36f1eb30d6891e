/// A cryptographic operation failed: a key that cannot be parsed, a ciphertext that does not authenticate,
/// an OpenSSL call that refused. `description` is safe to show; OpenSSL's own text is in `debugDescription`.
public struct CryptoError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Stable, extensible error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case invalidKey, unsupportedKey, invalidInput, authenticationFailed, unsupportedFormat, internalFailure }
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
        /// The code's stable name.
        public var description: String { base.rawValue }
    }

    /// What kind of failure.
    public var code: Code
    /// Client-safe explanation.
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
    /// The description plus OpenSSL's error text.
    public var debugDescription: String { debugDetail.isEmpty ? description : "\(description) [\(debugDetail)]" }
}
