import Foundation
import Jobs

extension ServeSettings {
    static let consumptionVariables: [Variable] = [
        seconds("BOUNCER_CONSUMPTION_POLL_SECONDS",
                "seconds between looks at the CONSUMPTION_REQUEST queue when idle (default 5)", upTo: 3600) {
            $0.consumption.pollInterval = $1
        },
        int("BOUNCER_CONSUMPTION_LEASE_SECONDS",
            "seconds a responder holds a claimed CONSUMPTION_REQUEST before another may take it (default 120)",
            1...3600) { $0.consumption.leaseSeconds = $1 },
        seconds("BOUNCER_CONSUMPTION_RETRY_BASE_SECONDS",
                "first retry delay when Apple is unavailable, doubling up to 1 h, jittered (default 60)", upTo: 3600) {
            $0.consumption.retryBase = $1
        },
    ]
}

extension ServeSettings {
    /// The variables of `WebhookSettings`, appended to `ServeSettings.variables`.
    static let webhookVariables: [Variable] = [
        int("BOUNCER_WEBHOOK_MAX_AGE_SECONDS", "how long undelivered webhook events are retried before failing (default 86400)",
            1...2_592_000, maxLength: 9) { $0.webhooks.maxAge = TimeInterval($1) },
        Variable(name: "BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS",
                 help: "1 = allow http webhook URLs and private/loopback addresses (development only; default 0)") { s, v in
            guard v == "0" || v == "1" else { return "must be 0 or 1" }
            s.webhooks.allowPrivateNetworks = v == "1"
            return nil
        },
        Variable(name: "BOUNCER_WEBHOOK_CA_FILE",
                 help: "PEM file of a CA trusted for webhook receivers, besides the system roots") { s, v in
            guard !v.isEmpty, !v.utf8.contains(0) else { return "must be a file path" }
            s.webhooks.caFile = v
            return nil
        },
        int("BOUNCER_WEBHOOK_CONCURRENCY", "webhook deliveries in flight per instance, 0 = this instance sends none (default 4)",
            0...64, maxLength: 3) {
            $0.webhooks.concurrency = $1
            $0.webhooks.enabled = $1 > 0
        },
        Variable(name: "BOUNCER_WEBHOOK_RETRY_BASE_SECONDS",
                 help: "first webhook retry delay, doubling up to 1 h with jitter (default 10)") { s, v in
            guard let x = Double(v), x.isFinite, x >= 0.05, x <= 3600 else { return "must be a number in 0.05...3600" }
            s.webhooks.retryBase = x
            return nil
        },
        Variable(name: "BOUNCER_WEBHOOK_SWEEP_SECONDS",
                 help: "how often expiries by the passage of time become webhook events (default 10)") { s, v in
            guard let x = Double(v), x.isFinite, x >= 0.1, x <= 3600 else { return "must be a number in 0.1...3600" }
            s.webhooks.sweepInterval = x
            return nil
        },
    ]
}
