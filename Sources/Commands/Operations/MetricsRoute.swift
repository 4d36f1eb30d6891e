import AppStoreJWS
import Crypto
import Domain
import HTTPCore
import Metrics

/// `GET /metrics`: the Prometheus text exposition, answered inline on the I/O thread (every value is in
/// memory, so a scrape still works when the worker pool or the database is stuck — exactly when it matters).
enum MetricsRoute {
    /// Registers the route; with `token`, a scrape must present `Authorization: Bearer <token>`.
    static func add(to router: inout Router, metrics: ServiceMetrics, token: String?) {
        // Compare digests, in constant time: neither the token's bytes nor its length leak through timing.
        let expected = token.map { Digest.sha256($0.utf8) }
        router.add(.get, "/metrics", placement: .eventLoop) { request in
            if let expected {
                guard let header = request.headers["Authorization"], let presented = bearerToken(header),
                      ProjectKeys.constantTimeEquals(Digest.sha256(presented.utf8), expected) else {
                    throw invalidToken
                }
            }
            return Response(status: 200, headers: ["Content-Type": MetricsRegistry.contentType],
                            body: Array(metrics.render().utf8))
        }
    }

    static let invalidToken = HTTPError(
        status: 401, code: "AUTH_INVALID_METRICS_TOKEN", message: "A valid metrics token is required.",
        suggestion: "Send Authorization: Bearer <BOUNCER_METRICS_TOKEN>.", headers: ["WWW-Authenticate": "Bearer"])

    /// The credentials of `Bearer <token>` (RFC 6750 §2.1), scheme case-insensitive.
    static func bearerToken(_ header: String) -> String? {
        let utf8 = header.utf8
        guard utf8.count > 7, zip(utf8.prefix(7), "bearer ".utf8).allSatisfy({ ($0 | 0x20) == $1 }) else { return nil }
        let token = utf8.dropFirst(7).drop { $0 == 0x20 }
        guard !token.isEmpty, !token.contains(0x20) else { return nil }
        return String(decoding: token, as: UTF8.self)
    }
}
