/// An error whose `description` is safe to show a client and whose internals (OpenSSL's error queue, a socket
/// error) ride along in `debugDetail`, for logs only.
public protocol DetailedError: Error, CustomStringConvertible, CustomDebugStringConvertible {
    /// Internal detail for logs, never for responses; empty when there is none.
    var debugDetail: String { get }
}

extension DetailedError {
    /// `description`, then `[debugDetail]` when there is any.
    public var debugDescription: String { debugDetail.isEmpty ? description : "\(description) [\(debugDetail)]" }
}
