/// What the server tells its observer about one finished request: the access-log line's values.
public struct RequestRecord: Sendable, Equatable {
    /// The method token, or `-` when the request could not be parsed.
    public var method: String
    /// The matched route pattern; `<unmatched>` for 404/405/bad paths, `-` for unparseable requests.
    /// Never the raw path, so it is safe as a metrics label (bounded, no keys).
    public var routeTemplate: String
    /// The status code sent.
    public var status: Int
    /// Body bytes of the response (before `HEAD` drops them).
    public var bytes: Int
    /// From the request's arrival to the response being ready, in nanoseconds (monotonic clock).
    public var durationNanoseconds: UInt64
    /// The request id echoed on the response.
    public var requestID: String = ""
    /// The client's numeric IP address (`Request.clientAddress`: the peer, or the forwarded client behind a trusted proxy).
    public var remoteAddress: String = ""

    /// `durationNanoseconds` in seconds.
    public var durationSeconds: Double { Double(durationNanoseconds) / 1_000_000_000 }
}
