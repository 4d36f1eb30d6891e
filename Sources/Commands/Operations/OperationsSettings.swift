public import API
import HTTPCore

/// `/metrics` and rate-limit settings of `bouncer serve` (all from `BOUNCER_*` variables).
public struct OperationsSettings: Sendable {
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

    /// Calls to Apple by lookups by transaction id, per project (`BOUNCER_APPLE_LOOKUP_RATE_PROJECT`, `_BURST`).
    /// The defaults are `LookupBudget.Settings`'s.
    var lookupProject = RateSetting(lookupDefaults.perProject)
    /// The same per client address (`BOUNCER_APPLE_LOOKUP_RATE_CLIENT`, `_BURST`).
    var lookupClient = RateSetting(lookupDefaults.perClient)
    /// How long Apple's "not found" is remembered (`BOUNCER_APPLE_LOOKUP_NOT_FOUND_SECONDS`, 0 = not at all).
    var lookupNotFoundSeconds = Int(lookupDefaults.notFoundTTL.components.seconds)
    /// Most "not found" answers remembered (`BOUNCER_APPLE_LOOKUP_NOT_FOUND_MAX`).
    var lookupNotFoundMax = lookupDefaults.maxRemembered
    private static let lookupDefaults = LookupBudget.Settings()

    /// The lookup budget these settings describe.
    public var lookupBudget: LookupBudget.Settings {
        LookupBudget.Settings(perProject: lookupProject.limit, perClient: lookupClient.limit,
                              notFoundTTL: .seconds(lookupNotFoundSeconds), maxRemembered: lookupNotFoundMax)
    }

    /// A rate (0 = off) and an optional burst (default: twice the rate, at least 1).
    struct RateSetting: Sendable, Equatable {
        var rate: Double = 0
        var burst: Int?

        init(rate: Double = 0, burst: Int? = nil) {
            self.rate = rate
            self.burst = burst
        }

        /// The setting of `limit` (nil: off).
        init(_ limit: RateLimit?) { self.init(rate: limit?.rate ?? 0, burst: limit?.burst) }

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
        rate("BOUNCER_APPLE_LOOKUP_RATE_PROJECT", "calls/s to Apple by transaction_id lookups, per project (default 5, 0 = off)") {
            $0.operations.lookupProject.rate = $1
        },
        burst("BOUNCER_APPLE_LOOKUP_RATE_PROJECT_BURST", "lookup calls to Apple in a burst, per project (default 50)") {
            $0.operations.lookupProject.burst = $1
        },
        rate("BOUNCER_APPLE_LOOKUP_RATE_CLIENT", "calls/s to Apple by transaction_id lookups, per client address (default 0.5, 0 = off)") {
            $0.operations.lookupClient.rate = $1
        },
        burst("BOUNCER_APPLE_LOOKUP_RATE_CLIENT_BURST", "lookup calls to Apple in a burst, per client address (default 10)") {
            $0.operations.lookupClient.burst = $1
        },
        Variable(name: "BOUNCER_APPLE_LOOKUP_NOT_FOUND_SECONDS",
                 help: "seconds Apple's 'not found' for a looked-up transaction_id is remembered (default 120, 0 = off)") { s, v in
            guard let n = Int(v), (0...86_400).contains(n) else { return "must be an integer in 0...86400" }
            s.operations.lookupNotFoundSeconds = n
            return nil
        },
        Variable(name: "BOUNCER_APPLE_LOOKUP_NOT_FOUND_MAX",
                 help: "most 'not found' lookup answers remembered at once (default 10000)") { s, v in
            guard let n = Int(v), (0...10_000_000).contains(n) else { return "must be an integer in 0...10000000" }
            s.operations.lookupNotFoundMax = n
            return nil
        },
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
