public import Crypto
import Foundation
import Synchronization

/// A request to send.
public struct HTTPClientRequest: Sendable {
    /// Method, e.g. "GET".
    public var method: String
    /// Absolute `http` or `https` URL.
    public var url: String
    /// Extra header fields (Host, Content-Length and User-Agent are added by the client).
    public var headers: [(name: String, value: String)]
    /// Body bytes (sent with Content-Length).
    public var body: [UInt8]
    /// Overrides whether retrying is safe; default: by method (RFC 9110 §9.2.2).
    public var idempotent: Bool?

    /// A request value.
    public init(method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: [UInt8] = [], idempotent: Bool? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.idempotent = idempotent
    }
}

/// Outbound HTTP/1.1 over TCP or TLS: connect and read timeouts, a bounded keep-alive pool per
/// (scheme, host, port), strict response parsing with limits, and `RetryPolicy`-driven retries.
///
/// Calls block the calling thread (sockets with poll deadlines). Run them on your own threads, not on
/// Swift's cooperative pool.
public final class HTTPClient: Sendable {
    /// Settings, gathered in one place.
    public struct Configuration: Sendable {
        /// Trust and TLS settings for `https` URLs.
        public var tls: TLSClientConfiguration
        /// Bound on TCP connect, and separately on the TLS handshake.
        public var connectTimeout: Duration
        /// Bound on each wait for response bytes (and on sending the request).
        public var readTimeout: Duration
        /// Bound on one whole attempt after connecting, so a server dripping a byte per `readTimeout`
        /// cannot hold a caller for long.
        public var responseTimeout: Duration
        /// Idle connections kept per (scheme, host, port); 0 disables keep-alive.
        public var maxIdleConnectionsPerHost: Int
        /// An idle connection older than this is closed instead of reused (servers drop idle keep-alive
        /// connections after a few seconds; reusing one at that moment would fail the request).
        public var maxIdleTime: Duration
        /// Response limits.
        public var limits: ResponseParser.Limits
        /// Retry policy used by `send`.
        public var retry: RetryPolicy
        /// The User-Agent header value.
        public var userAgent: String
        /// When set, only resolved addresses it approves are connected to (raw 4- or 16-byte addresses), checked
        /// on the very address passed to `connect` so a DNS answer cannot change between the check and the
        /// connection (rebinding). Refusing all throws `.addressNotAllowed`. See `AddressPolicy.isPublic`.
        public var allowAddress: (@Sendable ([UInt8]) -> Bool)?

        /// Defaults: 5 s connect, 30 s read, 60 s per response, 4 idle connections per host kept up to 4 s,
        /// default limits and retries.
        public init(tls: TLSClientConfiguration = TLSClientConfiguration(), connectTimeout: Duration = .seconds(5),
                    readTimeout: Duration = .seconds(30), responseTimeout: Duration = .seconds(60), maxIdleConnectionsPerHost: Int = 4,
                    maxIdleTime: Duration = .seconds(4), limits: ResponseParser.Limits = ResponseParser.Limits(), retry: RetryPolicy = RetryPolicy(),
                    userAgent: String = "bouncer", allowAddress: (@Sendable ([UInt8]) -> Bool)? = nil) {
            self.tls = tls
            self.connectTimeout = connectTimeout
            self.readTimeout = readTimeout
            self.responseTimeout = responseTimeout
            self.maxIdleConnectionsPerHost = max(0, maxIdleConnectionsPerHost)
            self.maxIdleTime = maxIdleTime
            self.limits = limits
            self.retry = retry
            self.userAgent = userAgent
            self.allowAddress = allowAddress
        }
    }

    private struct PoolKey: Hashable { var tls: Bool; var host: String; var port: Int }
    private struct Idle: Sendable { var connection: Connection; var since: ContinuousClock.Instant }
    private struct Pool { var idle: [PoolKey: [Idle]] = [:]; var closed = false }
    private struct Counters { var opened = 0; var reused = 0 }

    /// The configuration in use.
    public let configuration: Configuration
    private let tlsContext: TLSContext
    private let pool = Mutex(Pool())
    private let counters = Mutex(Counters())
    private let sleep: @Sendable (Duration) -> Void
    private let jitter: @Sendable () -> Double

    /// Builds the TLS context at once, so a bad CA file is a startup error.
    public convenience init(configuration: Configuration = Configuration()) throws(HTTPClientError) {
        try self.init(configuration: configuration, sleep: { Thread.sleep(forTimeInterval: Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18) },
                      jitter: { Double.random(in: 0..<1) })
    }

    /// Test seam: injected sleeping and jitter.
    init(configuration: Configuration, sleep: @escaping @Sendable (Duration) -> Void, jitter: @escaping @Sendable () -> Double) throws(HTTPClientError) {
        self.configuration = configuration
        do { tlsContext = try TLSContext(client: configuration.tls) } catch {
            throw HTTPClientError(.tls, error.description, debugDetail: error.debugDescription)
        }
        self.sleep = sleep
        self.jitter = jitter
    }

    /// Connections opened so far (a keep-alive test counts these).
    public var connectionsOpened: Int { counters.withLock { $0.opened } }
    /// Requests that reused a pooled connection.
    public var connectionsReused: Int { counters.withLock { $0.reused } }

    /// Closes every idle connection; connections finishing a request afterwards are closed too, not pooled.
    public func shutdown() {
        let dropped = pool.withLock { pool -> [PoolKey: [Idle]] in
            pool.closed = true
            defer { pool.idle.removeAll() }
            return pool.idle
        }
        _ = dropped   // released (and closed) here, outside the lock
    }

    /// Sends with retries per `configuration.retry`. Responses with status < 500 (other than 429) are
    /// returned; a final 5xx or 429 throws `.serverUnavailable` with the response attached.
    public func send(_ request: HTTPClientRequest) throws(HTTPClientError) -> HTTPClientResponse {
        let policy = configuration.retry
        let idempotent = request.idempotent ?? RetryPolicy.isIdempotent(method: request.method)
        var attempt = 0
        while true {
            attempt += 1
            let outcome: RetryPolicy.Outcome
            let response: HTTPClientResponse
            do {
                response = try execute(request)
            } catch {
                guard error.isNetworkFailure else { var final = error; final.attempts = attempt; throw final }
                switch policy.decision(afterAttempt: attempt, idempotent: idempotent, outcome: .networkFailure, jitter: jitter(), now: Date()) {
                case .retry(let delay): sleep(delay); continue
                case .stop: var final = error; final.attempts = attempt; throw final
                }
            }
            guard response.status >= 500 || response.status == 429 else { return response }
            outcome = .response(status: response.status, retryAfter: response.header("Retry-After"))
            switch policy.decision(afterAttempt: attempt, idempotent: idempotent, outcome: outcome, jitter: jitter(), now: Date()) {
            case .retry(let delay):
                sleep(delay)
            case .stop:
                throw HTTPClientError(.serverUnavailable, "server answered \(response.status)", attempts: attempt, response: response)
            }
        }
    }

    /// One attempt: no retries, every status returned as a response.
    ///
    /// `deadline`, when given, also bounds connecting, the handshake and every read and write (a caller's
    /// total budget across attempts, e.g. the App Store Server API client's per-call budget); passing it
    /// throws `.timeout` at once.
    public func execute(_ request: HTTPClientRequest, deadline callDeadline: ContinuousClock.Instant? = nil)
        throws(HTTPClientError) -> HTTPClientResponse
    {
        if let callDeadline, callDeadline <= .now { throw HTTPClientError(.timeout, "no time left for the request") }
        let target = try Target(request.url)
        let head = try Self.serialize(request, target: target, userAgent: configuration.userAgent)
        let key = PoolKey(tls: target.tls, host: target.host, port: target.port)
        // A pooled connection the server closed meanwhile is found stale here and dropped; one that
        // dies mid-request surfaces as `.io` and the retry policy decides.
        let connection: Connection
        if let pooled = takeIdle(key) {
            connection = pooled
            counters.withLock { $0.reused += 1 }
        } else {
            let connectTimeout = callDeadline.map { min(configuration.connectTimeout, $0 - .now) } ?? configuration.connectTimeout
            connection = try Connection.open(host: target.host, port: target.port, tls: target.tls ? tlsContext : nil,
                                             connectTimeout: connectTimeout, allowAddress: configuration.allowAddress)
            counters.withLock { $0.opened += 1 }
        }
        let attemptDeadline = min(ContinuousClock.now + configuration.responseTimeout, callDeadline ?? .now + configuration.responseTimeout)
        func deadline() -> ContinuousClock.Instant { min(.now + configuration.readTimeout, attemptDeadline) }
        try connection.write(head + request.body, deadline: deadline())
        var parser = ResponseParser(limits: configuration.limits, requestMethod: request.method)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = try connection.read(into: &buffer, deadline: deadline())
            if count == 0 {
                return try parser.finish()   // close-delimited body, or `.io` for a cut-short response
            }
            if let response = try parser.feed(buffer[0..<count]) {
                if parser.connectionReusable {
                    connection.requestsServed += 1
                    giveBack(connection, key)
                }
                return response
            }
        }
    }

    /// The most recently used idle connection that is young enough and still open; others are closed.
    private func takeIdle(_ key: PoolKey) -> Connection? {
        while let candidate = pool.withLock({ $0.idle[key]?.popLast() }) {
            if ContinuousClock.now - candidate.since < configuration.maxIdleTime, !candidate.connection.isStale {
                return candidate.connection
            }
        }
        return nil
    }

    private func giveBack(_ connection: Connection, _ key: PoolKey) {
        let rejected = pool.withLock { pool -> Connection? in
            guard !pool.closed, pool.idle[key, default: []].count < configuration.maxIdleConnectionsPerHost else { return connection }
            pool.idle[key, default: []].append(Idle(connection: connection, since: .now))
            return nil
        }
        _ = rejected   // over the bound or shut down: closed by deinit, outside the lock
    }

    /// Scheme, host, port and request-target of an absolute URL.
    struct Target {
        var tls: Bool
        var host: String
        var port: Int
        var path: String

        init(_ url: String) throws(HTTPClientError) {
            guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
                  scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
                  components.user == nil, components.password == nil
            else { throw HTTPClientError(.invalidRequest, "not an absolute http(s) URL") }
            tls = scheme == "https"
            // URLComponents keeps IPv6 literals bracketed in `host` on Linux; sockets and TLS want them bare.
            self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            port = components.port ?? (tls ? 443 : 80)
            guard (1...65535).contains(port) else { throw HTTPClientError(.invalidRequest, "port out of range") }
            let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            self.path = components.percentEncodedQuery.map { "\(path)?\($0)" } ?? path
        }

        var hostHeader: String {
            let literal = host.contains(":") ? "[\(host)]" : host
            return port == (tls ? 443 : 80) ? literal : "\(literal):\(port)"
        }
    }

    static func serialize(_ request: HTTPClientRequest, target: Target, userAgent: String) throws(HTTPClientError) -> [UInt8] {
        func valid(_ text: String, token: Bool) -> Bool {
            !text.isEmpty || !token ? text.utf8.allSatisfy { byte in
                token ? (byte > 32 && byte < 127 && byte != UInt8(ascii: ":")) : (byte == 9 || (byte >= 32 && byte != 127))
            } : false
        }
        guard valid(request.method, token: true) else { throw HTTPClientError(.invalidRequest, "invalid method") }
        var head = "\(request.method) \(target.path) HTTP/1.1\r\nHost: \(target.hostHeader)\r\nUser-Agent: \(userAgent)\r\n"
        for (name, value) in request.headers {
            // CR/LF in a name or value would let a caller's data inject headers: refused, not escaped.
            guard valid(name, token: true), valid(value, token: false) else {
                throw HTTPClientError(.invalidRequest, "invalid header field \(name.utf8.count <= 64 ? name : "(long)")")
            }
            let lower = name.lowercased()
            guard lower != "host", lower != "content-length", lower != "transfer-encoding" else {
                throw HTTPClientError(.invalidRequest, "\(name) is set by the client")
            }
            head += "\(name): \(value)\r\n"
        }
        if !request.body.isEmpty || ["POST", "PUT", "PATCH"].contains(request.method) {
            head += "Content-Length: \(request.body.count)\r\n"
        }
        head += "\r\n"
        return Array(head.utf8)
    }
}
