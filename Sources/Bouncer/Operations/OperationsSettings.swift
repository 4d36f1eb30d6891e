import HTTPCore

/// `/metrics` and rate-limit settings of `bouncer serve` (all from `BOUNCER_*` variables).
struct OperationsSettings: Sendable {
    /// `BOUNCER_METRICS_TOKEN`: bearer token for `GET /metrics`; unset = open (bind to a private interface).
    var metricsToken: String?
    /// Per-public-key requests/s on the receipts, subscriptions and offer-signature routes (`BOUNCER_RATE_LIMIT_PUBLIC_KEY`).
    var publicKey = RateSetting()
    /// Per-client-address requests/s on every `/v1` API route (`BOUNCER_RATE_LIMIT_CLIENT`).
    var client = RateSetting()
    /// Admin traffic of the process per presented credential, callers without one together (`BOUNCER_RATE_LIMIT_ADMIN`).
    var admin = RateSetting()
    /// Subscription reads that present `Bearer sk_…`, per public key (`BOUNCER_RATE_LIMIT_SECRET_KEY`).
    var secretKey = RateSetting()

    /// A rate (0 = off) and an optional burst (default: twice the rate, at least 1).
    struct RateSetting: Sendable, Equatable {
        var rate: Double = 0
        var burst: Int?

        /// The token-bucket limit, or nil when off.
        var limit: RateLimit? {
            guard rate > 0 else { return nil }
            return RateLimit(rate: rate, burst: burst ?? max(1, Int((rate * 2).rounded(.up))))
        }
    }
}

extension ServeSettings {
    /// The variables of `OperationsSettings`, appended to `ServeSettings.variables`.
    static let operationsVariables: [Variable] = [
        Variable(name: "BOUNCER_METRICS_TOKEN",
                 help: "bearer token for GET /metrics (unset = no token; >= 32 chars: openssl rand -base64 32)") { s, v in
            if let problem = tokenProblem(v) { return problem }
            s.operations.metricsToken = v
            return nil
        },
        rate("BOUNCER_RATE_LIMIT_PUBLIC_KEY", "requests/s per public key on receipts, subscriptions and offer signatures (default 0 = off)") {
            $0.operations.publicKey.rate = $1
        },
        burst("BOUNCER_RATE_LIMIT_PUBLIC_KEY_BURST", "burst per public key (default 2 x rate)") { $0.operations.publicKey.burst = $1 },
        rate("BOUNCER_RATE_LIMIT_CLIENT", "requests/s per client IP address on /v1 API routes (default 0 = off)") {
            $0.operations.client.rate = $1
        },
        burst("BOUNCER_RATE_LIMIT_CLIENT_BURST", "burst per client IP address (default 2 x rate)") { $0.operations.client.burst = $1 },
        rate("BOUNCER_RATE_LIMIT_ADMIN", "requests/s of /v1/admin traffic per presented credential; callers without one share a bucket (default 0 = off)") {
            $0.operations.admin.rate = $1
        },
        burst("BOUNCER_RATE_LIMIT_ADMIN_BURST", "admin burst (default 2 x rate)") { $0.operations.admin.burst = $1 },
        rate("BOUNCER_RATE_LIMIT_SECRET_KEY", "requests/s per public key of subscription reads with Bearer sk_... (default 0 = off)") {
            $0.operations.secretKey.rate = $1
        },
        burst("BOUNCER_RATE_LIMIT_SECRET_KEY_BURST", "secret-key burst (default 2 x rate)") { $0.operations.secretKey.burst = $1 },
    ]

    private static func rate(
        _ name: String, _ help: String, _ set: @escaping @Sendable (inout ServeSettings, Double) -> Void
    ) -> Variable {
        Variable(name: name, help: help) { s, v in
            guard let x = Double(v), x.isFinite, x >= 0, x <= 10_000_000 else {
                return "must be a number of requests per second in [0, 10000000] (0 = off)"
            }
            set(&s, x)
            return nil
        }
    }

    private static func burst(
        _ name: String, _ help: String, _ set: @escaping @Sendable (inout ServeSettings, Int) -> Void
    ) -> Variable {
        Variable(name: name, help: help) { s, v in
            guard let n = Int(v), (1...100_000_000).contains(n) else { return "must be an integer in 1...100000000" }
            set(&s, n)
            return nil
        }
    }
}
