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

        /// The token-bucket limit, or nil when off.
        var limit: RateLimit? {
            guard rate > 0 else { return nil }
            return RateLimit(rate: rate, burst: burst ?? max(1, Int((rate * 2).rounded(.up))))
        }
    }
}

extension OperationsSettings.RateSetting {
    /// The setting of `limit` (nil: off).
    init(_ limit: RateLimit?) { self.init(rate: limit?.rate ?? 0, burst: limit?.burst) }
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
    ]
        + rateLimit("BOUNCER_RATE_LIMIT_PUBLIC_KEY",
                    "requests/s per public key on receipts, subscriptions and offer signatures (default 0 = off)",
                    burst: "burst per public key (default 2 x rate)", \.publicKey)
        + rateLimit("BOUNCER_RATE_LIMIT_CLIENT", "requests/s per client IP address on /v1 API routes (default 0 = off)",
                    burst: "burst per client IP address (default 2 x rate)", \.client)
        + rateLimit("BOUNCER_RATE_LIMIT_ADMIN",
                    "requests/s of /v1/admin traffic per presented credential; callers without one share a bucket (default 0 = off)",
                    burst: "admin burst (default 2 x rate)", \.admin)
        + rateLimit("BOUNCER_RATE_LIMIT_SECRET_KEY",
                    "requests/s per public key of subscription reads with Bearer sk_... (default 0 = off)",
                    burst: "secret-key burst (default 2 x rate)", \.secretKey)
        + rateLimit("BOUNCER_APPLE_LOOKUP_RATE_PROJECT",
                    "calls/s to Apple by transaction_id lookups, per project (default 5, 0 = off)",
                    burst: "lookup calls to Apple in a burst, per project (default 50)", \.lookupProject)
        + rateLimit("BOUNCER_APPLE_LOOKUP_RATE_CLIENT",
                    "calls/s to Apple by transaction_id lookups, per client address (default 0.5, 0 = off)",
                    burst: "lookup calls to Apple in a burst, per client address (default 10)", \.lookupClient)
        + [
            int("BOUNCER_APPLE_LOOKUP_NOT_FOUND_SECONDS",
                "seconds Apple's 'not found' for a looked-up transaction_id is remembered (default 120, 0 = off)",
                0...86_400) { $0.operations.lookupNotFoundSeconds = $1 },
            int("BOUNCER_APPLE_LOOKUP_NOT_FOUND_MAX", "most 'not found' lookup answers remembered at once (default 10000)",
                0...10_000_000) { $0.operations.lookupNotFoundMax = $1 },
        ]

    /// `NAME` (a rate per second, 0 = off) and `NAME_BURST` (the bucket's size) of one rate limit.
    private static func rateLimit(
        _ name: String, _ help: String, burst burstHelp: String,
        _ setting: any WritableKeyPath<OperationsSettings, OperationsSettings.RateSetting> & Sendable
    ) -> [Variable] {
        [
            rate(name, help) { $0.operations[keyPath: setting].rate = $1 },
            int(name + "_BURST", burstHelp, 1...100_000_000) { $0.operations[keyPath: setting].burst = $1 },
        ]
    }

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
}
