public import Primitives

/// A complete, validated HTTP request as handlers see it.
public struct Request: Sendable {
    /// The request method (`HEAD` requests reach `GET` handlers with `method == .head`).
    public var method: HTTPMethod
    /// The raw, undecoded path of the request target (origin-form, without the query).
    public var path: String
    /// The raw, undecoded query after `?`, or nil when the target had none.
    public var query: String?
    /// Header fields in arrival order.
    public var headers: HTTPHeaders
    /// The body, de-chunked if it arrived chunked; empty when there was none.
    public var body: [UInt8]
    /// Percent-decoded values of the route's `:name` segments.
    public var pathParameters: [String: String]
    /// The route pattern that matched, e.g. `/v1/receipts/:publicKey` (safe to log: no secrets).
    public var routeTemplate: String
    /// The rate limits the matched route declared (`Router.add(rateLimits:)`), for the admission hook.
    public var rateLimitScopes: RateLimitScopes
    /// The incoming sane `X-Request-Id`, or one the server generated; echoed on the response.
    public var requestID: String
    /// The peer's numeric IP address (the socket's other end: a proxy, when there is one).
    public var remoteAddress: String
    /// The client's numeric IP address: `remoteAddress`, or, when that peer is in
    /// `Configuration.trustedProxies`, the rightmost untrusted hop of `X-Forwarded-For`. Use this one
    /// for anything per client (logs; limits go by `clientKey`); a client cannot choose it by sending the header.
    public var clientAddress: String
    /// HTTP minor version (0 or 1).
    public var versionMinor: Int

    /// Creates a request; the server does this, tests may too.
    public init(
        method: HTTPMethod, path: String, query: String? = nil, headers: HTTPHeaders = .init(),
        body: [UInt8] = [], pathParameters: [String: String] = [:], routeTemplate: String = "",
        rateLimitScopes: RateLimitScopes = [], requestID: String = "", remoteAddress: String = "",
        clientAddress: String? = nil, versionMinor: Int = 1
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.pathParameters = pathParameters
        self.routeTemplate = routeTemplate
        self.rateLimitScopes = rateLimitScopes
        self.requestID = requestID
        self.remoteAddress = remoteAddress
        self.clientAddress = clientAddress ?? remoteAddress
        self.versionMinor = versionMinor
    }

    /// The query split on `&` and `=`, percent-decoded (`+` means space, per HTML forms);
    /// pairs whose encoding is invalid are skipped.
    public func queryItems() -> [(name: String, value: String)] {
        guard let query, !query.isEmpty else { return [] }
        var items: [(name: String, value: String)] = []
        for pair in query.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let rawName = parts.first else { continue }
            let value: String?
            if parts.count > 1 { value = PercentDecoding.decode(parts[1], plusIsSpace: true) } else { value = "" }
            guard let name = PercentDecoding.decode(rawName, plusIsSpace: true), let value else { continue }
            items.append((name: name, value: value))
        }
        return items
    }
}

/// Percent-decoding (RFC 3986 §2.1) that rejects malformed escapes and invalid UTF-8.
enum PercentDecoding {
    static func decode<C: Collection>(_ bytes: C, plusIsSpace: Bool) -> String? where C.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i != bytes.endIndex {
            let b = bytes[i]
            if b == UInt8(ascii: "%") {
                let h = bytes.index(after: i)
                guard h != bytes.endIndex else { return nil }
                let l = bytes.index(after: h)
                guard l != bytes.endIndex, let hi = Hex.value(of: bytes[h]), let lo = Hex.value(of: bytes[l]) else { return nil }
                out.append(hi << 4 | lo)
                i = bytes.index(after: l)
                continue
            }
            out.append(plusIsSpace && b == UInt8(ascii: "+") ? UInt8(ascii: " ") : b)
            i = bytes.index(after: i)
        }
        return String(validating: out, as: UTF8.self)
    }
}
