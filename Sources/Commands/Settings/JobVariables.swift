import Foundation
import Jobs

extension ServeSettings {
    static let consumptionVariables: [Variable] = [
        Variable(name: "BOUNCER_CONSUMPTION_POLL_SECONDS",
                 help: "seconds between looks at the CONSUMPTION_REQUEST queue when idle (default 5)") { s, v in
            guard let x = Double(v), x.isFinite, x > 0, x <= 3600 else { return "must be a number of seconds in (0, 3600]" }
            s.consumption.pollInterval = .milliseconds(Int64((x * 1000).rounded(.up)))
            return nil
        },
        Variable(name: "BOUNCER_CONSUMPTION_LEASE_SECONDS",
                 help: "seconds a responder holds a claimed CONSUMPTION_REQUEST before another may take it (default 120)") {
            s, v in
            guard let n = Int(v), (1...3600).contains(n) else { return "must be an integer in 1...3600" }
            s.consumption.leaseSeconds = n
            return nil
        },
        Variable(name: "BOUNCER_CONSUMPTION_RETRY_BASE_SECONDS",
                 help: "first retry delay when Apple is unavailable, doubling up to 1 h, jittered (default 60)") { s, v in
            guard let x = Double(v), x.isFinite, x > 0, x <= 3600 else { return "must be a number of seconds in (0, 3600]" }
            s.consumption.retryBase = .milliseconds(Int64((x * 1000).rounded(.up)))
            return nil
        },
    ]
}

extension ServeSettings {
    /// The variables of `WebhookSettings`, appended to `ServeSettings.variables`.
    static let webhookVariables: [Variable] = [
        Variable(name: "BOUNCER_WEBHOOK_MAX_AGE_SECONDS",
                 help: "how long undelivered webhook events are retried before failing (default 86400)") { s, v in
            guard v.utf8.count <= 9, let n = Int(v), (1...2_592_000).contains(n) else {
                return "must be an integer in 1...2592000"
            }
            s.webhooks.maxAge = TimeInterval(n)
            return nil
        },
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
        Variable(name: "BOUNCER_WEBHOOK_CONCURRENCY",
                 help: "webhook deliveries in flight per instance, 0 = this instance sends none (default 4)") { s, v in
            guard v.utf8.count <= 3, let n = Int(v), (0...64).contains(n) else { return "must be an integer in 0...64" }
            s.webhooks.concurrency = n
            s.webhooks.enabled = n > 0
            return nil
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
