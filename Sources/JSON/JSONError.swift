/// Why a document was rejected, and where.
///
/// `description` is safe to return to a client: it names the rule and the byte offset, never echoes
/// input bytes.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, extensible reason code (static members over a private enum, so new codes are not a
    /// source break).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// Each code with its client-safe phrase (the `description`).
        private enum Base: String, Hashable, Sendable {
            case unexpectedEnd = "unexpected end of input"
            case unexpectedCharacter = "unexpected character"
            case invalidEscape = "invalid escape sequence"
            case loneSurrogate = "unpaired UTF-16 surrogate escape"
            case invalidUTF8 = "invalid UTF-8"
            case controlCharacter = "unescaped control character in string"
            case invalidNumber = "invalid number"
            case tooDeep = "nesting too deep"
            case tooLarge = "value too large"
            case duplicateKey = "duplicate object key"
            case trailingData = "data after the top-level value"
            case byteOrderMark = "byte order mark not allowed"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The input ended inside a value (or was empty / only whitespace).
        public static let unexpectedEnd = Code(.unexpectedEnd)
        /// A byte that the grammar does not allow here (comments, trailing commas, `NaN`, single quotes…).
        public static let unexpectedCharacter = Code(.unexpectedCharacter)
        /// A backslash escape other than `\" \\ \/ \b \f \n \r \t \uXXXX`, or `\u` without four hex digits.
        public static let invalidEscape = Code(.invalidEscape)
        /// A `\u` escape of a UTF-16 surrogate that is not part of a valid high+low pair.
        public static let loneSurrogate = Code(.loneSurrogate)
        /// Bytes inside a string that are not well-formed UTF-8 (overlong, surrogate, > U+10FFFF, truncated).
        public static let invalidUTF8 = Code(.invalidUTF8)
        /// An unescaped byte below 0x20 inside a string (RFC 8259 §7).
        public static let controlCharacter = Code(.controlCharacter)
        /// A number that breaks the RFC 8259 §6 grammar (leading zero, `1.`, `.5`, `+1`, `1e`…).
        public static let invalidNumber = Code(.invalidNumber)
        /// Arrays/objects nested deeper than `Limits.maxDepth`.
        public static let tooDeep = Code(.tooDeep)
        /// The document, a string or a number literal is longer than its limit.
        public static let tooLarge = Code(.tooLarge)
        /// An object repeats a key. Rejected because parsers disagree on which copy wins, and that
        /// disagreement is an attack on signed payloads.
        public static let duplicateKey = Code(.duplicateKey)
        /// Something other than whitespace follows the single top-level value.
        public static let trailingData = Code(.trailingData)
        /// The document starts with a UTF-8 byte order mark (RFC 8259 §8.1: must not be added).
        public static let byteOrderMark = Code(.byteOrderMark)

        /// A short, client-safe phrase for the code.
        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// Zero-based byte offset into the input where the problem was detected (for a duplicate key,
    /// the key's opening quote; for a bad escape, its backslash; for `tooLarge` on the whole
    /// document, the limit).
    public let offset: Int

    /// Creates an error; the parser is the usual source, tests may build expected values.
    public init(_ code: Code, at offset: Int) {
        self.code = code
        self.offset = offset
    }

    /// E.g. `invalid JSON at byte 12: duplicate object key`.
    public var description: String { "invalid JSON at byte \(offset): \(code)" }
}
