import Verification
import API
import Domain
import HTTPCore

/// Decides, on the I/O thread right after routing, whether a request is over one of its rate limits.
///
/// Each route declares its scopes where it is registered (`Router.add(rateLimits:)`, the API's `Routes`); this
/// reads them from `Request.rateLimitScopes`. Each scope is a token bucket per key, per process (N instances
/// allow N times the rate):
/// - `client`: the client (`Request.clientKey`: the peer, or the forwarded client when the peer is in
///   `BOUNCER_TRUSTED_PROXIES`; an IPv6 client by its /64);
/// - `publicKey`: the path's public key (a key ships inside apps, so anyone can replay it); only well-formed
///   keys get a bucket, malformed ones are rejected by the API anyway;
/// - `secretKey`: requests presenting `Bearer sk_…` (a backend) get their own bucket per public key instead of
///   the public-key one; the secret is not checked here (no database on the I/O thread), a forged one is still
///   limited by `client` and then rejected by the API;
/// - `admin`: all admin routes together, per presented credential (`Routes.adminRateLimitKey`): callers without
///   one share the `anonymous` bucket, each bearer token or console session has its own, so strangers never drain
///   the real admin's (or a customer's secret-key) budget.
/// Routes that declare no scope (`/healthz`, `/readyz`, `/metrics`) are never limited.
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
    func admit(_ request: Request) -> HTTPError? {
        let scopes = request.rateLimitScopes
        guard !scopes.isEmpty else { return nil }
        if scopes.contains(.client), let limit = settings.client.limit,
           let rejected = check("client", key: "c:" + request.clientKey.description, limit) { return rejected }
        if scopes.contains(.admin), let limit = settings.admin.limit,
           let rejected = check("admin", key: "a:" + Routes.adminRateLimitKey(request, hasher: SHA256SecretHasher()), limit) {
            return rejected
        }
        guard scopes.contains(.publicKey) || scopes.contains(.secretKey),
              let publicKey = request.pathParameters["publicKey"], ProjectKeys.isPublicKeySyntax(publicKey)
        else { return nil }
        if scopes.contains(.secretKey), let authorization = request.headers["Authorization"],
           Self.presentsSecretKey(authorization) {
            guard let limit = settings.secretKey.limit else { return nil }
            return check("secret_key", key: "s:" + publicKey, limit)
        }
        guard scopes.contains(.publicKey), let limit = settings.publicKey.limit else { return nil }
        return check("public_key", key: "p:" + publicKey, limit)
    }

    private func check(_ scope: String, key: String, _ limit: RateLimit) -> HTTPError? {
        let decision = limiter.acquire(key, limit: limit)
        guard !decision.allowed else { return nil }
        metrics.rateLimited(scope: scope)
        return Self.tooManyRequests(decision, scope: scope)
    }

    /// 429 in the API's error shape, with `Retry-After` (RFC 9110 §10.2.3) and the `RateLimit-*` fields of
    /// draft-ietf-httpapi-ratelimit-headers (limit = bucket size, reset = seconds until it is full again).
    static func tooManyRequests(_ decision: RateLimitDecision, scope: String) -> HTTPError {
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
        return HTTPError(
            status: 429, code: "RATE_LIMITED", message: "Too many requests.",
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
