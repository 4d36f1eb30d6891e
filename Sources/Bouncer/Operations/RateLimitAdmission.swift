import Domain
import HTTPCore

/// Decides, on the I/O thread right after routing, whether a request is over one of its rate limits.
///
/// Scopes (each a token bucket per key, per process — N instances allow N times the rate):
/// - `client`: the peer address, on every `/v1` API route (behind a proxy, the proxy's address);
/// - `public_key`: the path's public key on receipts and subscriptions (a key ships inside apps, so anyone
///   can replay it); only well-formed keys get a bucket, malformed ones are rejected by the API anyway;
/// - `secret_key`: subscription reads presenting `Bearer sk_…` (a backend) get their own bucket per public key
///   instead of the public-key one; the secret is not checked here (no database on the I/O thread), a
///   forged one is still limited by `client` and then rejected by the API;
/// - `admin`: all of `/v1/admin` together.
/// `/healthz`, `/readyz`, `/metrics` and `/v1/ping` are never limited; webhook notifications only by `client`.
struct RateLimitAdmission: Sendable {
    let limiter: RateLimiter
    let settings: OperationsSettings
    let metrics: ServiceMetrics

    /// Nil when every limit is off (the server then skips the hook entirely).
    init?(settings: OperationsSettings, metrics: ServiceMetrics, limiter: RateLimiter = RateLimiter()) {
        guard [settings.publicKey, settings.client, settings.admin, settings.secretKey].contains(where: { $0.limit != nil })
        else { return nil }
        self.limiter = limiter
        self.settings = settings
        self.metrics = metrics
    }

    /// The `admission` hook: nil lets the request through, else the 429.
    func admit(_ request: Request) -> Response? {
        let template = request.routeTemplate
        guard template.hasPrefix("/v1/"), !template.hasPrefix("/v1/ping") else { return nil }
        if let limit = settings.client.limit,
           let rejected = check("client", key: "c:" + request.remoteAddress, limit) { return rejected }
        if template.hasPrefix("/v1/admin/") || template == "/v1/admin" {
            if let limit = settings.admin.limit, let rejected = check("admin", key: "admin", limit) { return rejected }
            return nil
        }
        let isReceipts = template.hasPrefix("/v1/receipts/")
        let isSubscriptions = template.hasPrefix("/v1/subscriptions/")
        guard isReceipts || isSubscriptions, let publicKey = request.pathParameters["publicKey"],
              ProjectKeys.isPublicKeySyntax(publicKey) else { return nil }
        if isSubscriptions, let authorization = request.headers["Authorization"], Self.presentsSecretKey(authorization) {
            guard let limit = settings.secretKey.limit else { return nil }
            return check("secret_key", key: "s:" + publicKey, limit)
        }
        guard let limit = settings.publicKey.limit else { return nil }
        return check("public_key", key: "p:" + publicKey, limit)
    }

    private func check(_ scope: String, key: String, _ limit: RateLimit) -> Response? {
        let decision = limiter.acquire(key, limit: limit)
        guard !decision.allowed else { return nil }
        metrics.rateLimited(scope: scope)
        return Self.tooManyRequests(decision, scope: scope)
    }

    /// 429 in the API's error shape, with `Retry-After` (RFC 9110 §10.2.3) and the `RateLimit-*` fields of
    /// draft-ietf-httpapi-ratelimit-headers (limit = bucket size, reset = seconds until it is full again).
    static func tooManyRequests(_ decision: RateLimitDecision, scope: String) -> Response {
        var headers = HTTPHeaders()
        headers.add("Retry-After", String(decision.retryAfterSeconds))
        headers.add("RateLimit-Limit", String(decision.limit))
        headers.add("RateLimit-Remaining", String(decision.remaining))
        headers.add("RateLimit-Reset", String(decision.resetSeconds))
        let what: String
        switch scope {
        case "public_key": what = "this public key"
        case "secret_key": what = "secret-key reads of this project"
        case "admin": what = "the admin API"
        default: what = "your address"
        }
        return .error(429, message: "Too many requests.", code: "RATE_LIMITED",
                      suggestion: "Retry after the number of seconds in Retry-After; the rate limit for \(what) is "
                        + "\(decision.limit) requests in a burst per server instance.",
                      headers: headers)
    }

    /// `Bearer sk_…`, scheme case-insensitive (RFC 9110 §11.1); only the prefix matters here.
    static func presentsSecretKey(_ header: String) -> Bool {
        let utf8 = header.utf8
        guard utf8.count > 10 else { return false }
        guard zip(utf8.prefix(7), "bearer ".utf8).allSatisfy({ ($0 | 0x20) == $1 }) else { return false }
        return utf8.dropFirst(7).drop { $0 == 0x20 }.starts(with: "sk_".utf8)
    }
}
