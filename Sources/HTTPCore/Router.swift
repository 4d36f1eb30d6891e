import Glibc

/// A request handler: runs on a worker thread (or the event loop for `.eventLoop` routes) and
/// may block. A thrown `HTTPError` is rendered with the request id; anything else becomes 500 `INTERNAL_ERROR`.
public typealias Handler = @Sendable (Request) throws -> Response

/// A route's answer from memory on the event loop (`Router.add(inline:)`); nil: the route's handler answers on the
/// pool. Never blocks.
public typealias InlineHandler = @Sendable (Request) -> Response?

/// The rate limits that guard a route, declared where the route is registered and read by the server's
/// admission hook from `Request.rateLimitScopes` (no matching of path strings).
public struct RateLimitScopes: OptionSet, Sendable, Hashable {
    /// The bits.
    public let rawValue: UInt8
    /// Wraps bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// One bucket per client address.
    public static let client = RateLimitScopes(rawValue: 1 << 0)
    /// One bucket per well-formed `:publicKey` path parameter.
    public static let publicKey = RateLimitScopes(rawValue: 1 << 1)
    /// Requests presenting `Bearer sk_…` use a bucket per public key instead of the public-key one.
    public static let secretKey = RateLimitScopes(rawValue: 1 << 2)
    /// One bucket shared by every admin route.
    public static let admin = RateLimitScopes(rawValue: 1 << 3)
}

/// Maps (method, path) to handlers; patterns use `:name` segments, e.g. `/v1/receipts/:publicKey`.
public struct Router: Sendable {
    /// Where a route's handler runs.
    public enum Placement: Sendable, Equatable {
        /// On the bounded worker pool (the default): handlers that block on the database or do crypto.
        case workerPool
        /// Inline on the I/O thread: only for handlers that never block and finish in microseconds
        /// (health checks, the benchmark route); saves two thread hand-offs per request.
        case eventLoop
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    struct Route: Sendable {
        var method: HTTPMethod
        var template: String
        var segments: [Segment]
        var literalCount: Int
        var placement: Placement
        var rateLimits: RateLimitScopes
        /// Raises the server's body limit for this route (nil: the server's `maxBodyBytes`).
        var maxBodyBytes: Int?
        var handler: Handler
        /// Tried first on the event loop (`add(inline:)`): the answer, or nil to run `handler` on the pool.
        var inline: InlineHandler?
    }

    enum Match: Sendable {
        case found(Route, parameters: [String: String])
        case methodNotAllowed(allow: [String])
        case notFound
        case badPath(String)
    }

    var routes: [Route] = []
    /// The routes' segments as a tree (`RouteTree`), so a request visits the few routes its path can match
    /// instead of all of them (a linear scan of ~200 routes cost ~20,000 instructions per request).
    private var tree = RouteTree()

    /// An empty router: every request is 404.
    public init() {}

    /// Registers `handler` for `method` requests matching `pattern`; `GET` routes also answer `HEAD`.
    /// Literal segments win over parameters when two patterns match the same path. `rateLimits` names the
    /// limits that guard the route (none for operational routes). `maxBodyBytes` raises the server's body limit
    /// for this route only (a value at or below `Configuration.maxBodyBytes` changes nothing); it counts the body
    /// as sent, and a chunked body may add `maxChunkedFramingBytes` of framing on top, as for every route.
    ///
    /// `inline`, when given, runs first on the event loop for a `.workerPool` route: a request it can answer from
    /// memory (its answer) skips the two thread hand-offs of the pool; nil sends the request to `handler` as usual.
    /// It must never block and must have done nothing that `handler` would do again when it returns nil.
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, placement: Placement = .workerPool, rateLimits: RateLimitScopes = [],
        maxBodyBytes: Int? = nil, inline: InlineHandler? = nil, _ handler: @escaping Handler
    ) {
        let segments = Self.split(pattern).map { raw -> Segment in
            raw.hasPrefix(":") ? .parameter(String(raw.dropFirst())) : .literal(String(raw))
        }
        let literalCount = segments.reduce(0) { if case .literal = $1 { $0 + 1 } else { $0 } }
        tree.insert(segments, route: routes.count)
        routes.append(Route(method: method, template: pattern, segments: segments, literalCount: literalCount,
                            placement: placement, rateLimits: rateLimits, maxBodyBytes: maxBodyBytes, handler: handler,
                            inline: inline))
    }

    /// Whether any route raises the body limit (the parser asks `maxBodyBytes(_:_:)` only then).
    var hasBodyLimitOverrides: Bool { routes.contains { $0.maxBodyBytes != nil } }

    /// The raised body limit of the route `method` and `path` match, nil when none (or no route matches).
    func maxBodyBytes(_ method: HTTPMethod, _ path: String) -> Int? {
        if case .found(let route, _) = match(method, path) { return route.maxBodyBytes }
        return nil
    }

    /// The raised body limit declared for (method, pattern), nil when none or no such route.
    public func maxBodyBytes(method: HTTPMethod, pattern: String) -> Int? {
        routes.first { $0.method == method && $0.template == pattern }?.maxBodyBytes
    }

    /// Every registered (method, pattern), for diagnostics and tests.
    public var registeredRoutes: [(method: HTTPMethod, pattern: String)] {
        routes.map { (method: $0.method, pattern: $0.template) }
    }

    /// The rate-limit scopes declared for (method, pattern), nil when no such route is registered.
    public func rateLimits(_ method: HTTPMethod, _ pattern: String) -> RateLimitScopes? {
        routes.first { $0.method == method && $0.template == pattern }?.rateLimits
    }

    /// The segments between `/`s (a leading `/` dropped, empty segments kept). A byte scan: the parser admits
    /// only visible ASCII in a target, and `Character`-wise splitting cost ~3,600 instructions per request.
    static func split(_ path: String) -> [Substring] {
        let utf8 = path.utf8
        let scanned: [Substring]? = utf8.withContiguousStorageIfAvailable { bytes in
            var segments: [Substring] = []
            let first = bytes.first == UInt8(ascii: "/") ? 1 : 0
            var start = utf8.index(utf8.startIndex, offsetBy: first)  // O(1) on native UTF-8 strings
            for offset in first..<bytes.count where bytes[offset] == UInt8(ascii: "/") {
                let end = utf8.index(utf8.startIndex, offsetBy: offset)
                segments.append(path[start..<end])
                start = utf8.index(after: end)
            }
            segments.append(path[start...])
            return segments
        }
        if let scanned { return scanned }
        let trimmed = path.hasPrefix("/") ? path.dropFirst() : path[...]  // a bridged, non-contiguous string
        return trimmed.split(separator: "/", omittingEmptySubsequences: false)
    }

    func match(_ method: HTTPMethod, _ path: String) -> Match {
        let segments = Self.split(path)
        // Registration order, so ties go to the route registered first.
        let matching = tree.routes(matching: segments)
        var best: Int? = nil
        let pathMatched = !matching.isEmpty
        for index in matching {
            let route = routes[index]
            let methodMatches = route.method == method || (method == .head && route.method == .get)
            if methodMatches, best.map({ route.literalCount > routes[$0].literalCount }) ?? true { best = index }
        }
        guard let best else {
            guard pathMatched else { return .notFound }
            // Only a 405 needs every method of the path.
            var allowed: [HTTPMethod] = []
            for index in matching where !allowed.contains(routes[index].method) {
                allowed.append(routes[index].method)
            }
            if allowed.contains(.get), !allowed.contains(.head) { allowed.append(.head) }
            let order: [HTTPMethod] = [.get, .head, .post, .put, .patch, .delete, .options]
            let sorted = order.filter { allowed.contains($0) }.map(\.rawValue)
                + allowed.filter { !order.contains($0) }.map(\.rawValue)
            return .methodNotAllowed(allow: sorted)
        }
        let route = routes[best]
        var parameters: [String: String] = [:]
        let parameterCount = route.segments.count - route.literalCount
        if parameterCount > 0 { parameters.reserveCapacity(parameterCount) }
        for (pattern, actual) in zip(route.segments, segments) {
            guard case .parameter(let name) = pattern else { continue }
            if !actual.utf8.contains(where: { $0 == UInt8(ascii: "%") || $0 == 0 }) {
                parameters[name] = String(actual)  // nothing to decode (the common case)
                continue
            }
            // Segments were split on the raw "/" before decoding, so a decoded "/" (from %2F) is data, not path
            // structure: user ids may contain it. A decoded NUL would cut C strings downstream: refused.
            guard let value = PercentDecoding.decode(actual.utf8, plusIsSpace: false),
                  !value.utf8.contains(0) else {
                return .badPath("Path segment for :\(name) is not valid percent-encoded UTF-8")
            }
            parameters[name] = value
        }
        return .found(route, parameters: parameters)
    }
}

/// Route patterns as a tree of segments: a literal child per distinct literal, one child for any parameter, and at
/// each node the routes whose pattern ends there. A path's matching routes are exactly those whose pattern has its
/// segment count and, segment by segment, either a parameter or the same bytes.
struct RouteTree: Sendable {
    private struct Node: Sendable {
        var literals: [(literal: String, child: Int)] = []
        var parameter: Int?
        var routes: [Int] = []
    }

    private var nodes = [Node()]

    /// Adds the route numbered `route` (its index in registration order) under `segments`.
    mutating func insert(_ segments: [Router.Segment], route: Int) {
        var node = 0
        for segment in segments {
            switch segment {
            case .literal(let literal):
                if let existing = nodes[node].literals.first(where: { $0.literal.utf8.elementsEqual(literal.utf8) }) {
                    node = existing.child
                } else {
                    nodes.append(Node())
                    nodes[node].literals.append((literal, nodes.count - 1))
                    node = nodes.count - 1
                }
            case .parameter:
                if let child = nodes[node].parameter {
                    node = child
                } else {
                    nodes.append(Node())
                    nodes[node].parameter = nodes.count - 1
                    node = nodes.count - 1
                }
            }
        }
        nodes[node].routes.append(route)
    }

    /// The routes whose pattern matches `segments`, ascending (registration order).
    func routes(matching segments: [Substring]) -> [Int] {
        var found: [Int] = []
        collect(0, segments, 0, into: &found)
        if found.count > 1 { found.sort() }
        return found
    }

    /// Depth-first: both a literal and the parameter child can lead to a match. It descends only where a pattern
    /// goes on, so the depth is at most the longest pattern's, whatever the path.
    private func collect(_ node: Int, _ segments: [Substring], _ depth: Int, into found: inout [Int]) {
        guard depth < segments.count else {
            found.append(contentsOf: nodes[node].routes)
            return
        }
        let segment = segments[depth]
        for (literal, child) in nodes[node].literals where Self.equalBytes(literal, segment) {
            collect(child, segments, depth + 1, into: &found)
            break  // literals are distinct
        }
        if let child = nodes[node].parameter { collect(child, segments, depth + 1, into: &found) }
    }

    /// Byte equality: lengths first (most literals differ there), then one `memcmp`.
    private static func equalBytes(_ literal: String, _ value: Substring) -> Bool {
        guard literal.utf8.count == value.utf8.count else { return false }
        let compared = literal.utf8.withContiguousStorageIfAvailable { a in
            value.utf8.withContiguousStorageIfAvailable { b in
                guard let pa = a.baseAddress, let pb = b.baseAddress else { return a.count == b.count }
                return memcmp(pa, pb, a.count) == 0
            }
        }
        return (compared ?? nil) ?? literal.utf8.elementsEqual(value.utf8)
    }
}
