public import Primitives

/// An error from the PostgreSQL layer: a connection problem, a pool timeout, a server error with its
/// SQLSTATE, or a value that could not be decoded.
///
/// `description` is safe to show a client (no SQL, no values, no server text); `debugDescription`
/// carries everything for the log.
public struct PGError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A stable, extensible error category.
    /// An open vocabulary (`OpenValue`, one author of the idiom); its known values are the extension's static members.
    public typealias Code = OpenValue<CodeTag, String>
    /// Tells `PGError.Code` apart from the other open vocabularies.
    public enum CodeTag {}

    /// What kind of failure this is.
    public var code: Code
    /// The five-character SQLSTATE for server errors (e.g. `23505`), otherwise nil.
    public var sqlState: String?
    /// The primary message (server text for server errors). May contain data: log it, do not return it.
    public var message: String
    /// The server's DETAIL field, which often contains row values. Log only.
    public var detail: String?
    /// The violated constraint's name, for integrity errors.
    public var constraint: String?
    /// The server's HINT field.
    public var hint: String?
    /// True when a cached prepared statement was refused because a migration changed its result (SQLSTATE 0A000,
    /// "cached plan must not change result type"); the connection has forgotten it, so rerunning prepares it anew.
    public internal(set) var isStaleStatement = false

    /// SQLSTATE 0A000 (feature_not_supported), which PostgreSQL raises for a stale cached plan.
    static let stalePlanState = "0A000"

    /// Creates an error; the layer creates these, callers usually only inspect them.
    public init(code: Code, message: String, sqlState: String? = nil, detail: String? = nil,
                constraint: String? = nil, hint: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.constraint = constraint
        self.hint = hint
    }

    /// True when the database is unreachable or overloaded rather than the statement being wrong:
    /// the API answers 503 with `Retry-After` and never a verdict about the caller's data.
    public var isUnavailable: Bool {
        if code == .connectionFailed || code == .connectionLost || code == .poolTimeout || code == .closed {
            return true
        }
        guard let state = sqlState else { return false }
        // Class 08: connection exception. 57P01-57P03: admin/crash shutdown, cannot connect now.
        // 53300: too many connections. 57014 (statement timeout) is deliberately excluded: the query ran.
        return state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03" || state == "53300"
    }

    /// True for serialization failures and deadlocks (40001, 40P01): rerunning the whole transaction
    /// is the documented remedy (PostgreSQL docs, "Serialization Failure Handling"); and for a cached statement a
    /// migration made stale (`isStaleStatement`: it never ran, and runs prepared anew).
    public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" || isStaleStatement }

    /// True for a unique-constraint violation (23505).
    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// A client-safe summary: the category and SQLSTATE, never server text or values.
    public var description: String {
        if isUnavailable { return "database unavailable (\(code))" }
        if let sqlState { return "database error \(code) (SQLSTATE \(sqlState))" }
        return "database error \(code)"
    }

    /// Everything known, for logs.
    public var debugDescription: String {
        var s = "PGError(\(code)"
        if let sqlState { s += ", sqlState: \(sqlState)" }
        s += ", message: \(message)"
        if let detail { s += ", detail: \(detail)" }
        if let constraint { s += ", constraint: \(constraint)" }
        if let hint { s += ", hint: \(hint)" }
        return s + ")"
    }
}

extension PGError.Code {
    /// The settings or URL are malformed; nothing was attempted.
    public static let invalidSettings = Self(rawValue: "invalidSettings")
    /// A new connection could not be established.
    public static let connectionFailed = Self(rawValue: "connectionFailed")
    /// An established connection broke (server restart, network); the connection is discarded.
    public static let connectionLost = Self(rawValue: "connectionLost")
    /// No pooled connection became free before the acquire timeout.
    public static let poolTimeout = Self(rawValue: "poolTimeout")
    /// The pool or connection was shut down.
    public static let closed = Self(rawValue: "closed")
    /// The server rejected the statement; see `sqlState`.
    public static let server = Self(rawValue: "server")
    /// A result value could not be decoded into the requested Swift type.
    public static let decoding = Self(rawValue: "decoding")
    /// Starting, stopping or initialising a local cluster failed.
    public static let cluster = Self(rawValue: "cluster")
}
