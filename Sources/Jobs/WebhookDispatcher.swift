import Crypto
import Dispatch
import Domain
import Foundation
import Glibc
import HTTPClient
import JSON
import Postgres
import Primitives
import Storage
import Synchronization

/// Webhook settings of `bouncer serve` (`BOUNCER_WEBHOOK_*`).
struct WebhookSettings: Sendable, Equatable {
    /// `BOUNCER_WEBHOOK_MAX_AGE_SECONDS`: how long an undelivered event is retried before it is marked failed.
    var maxAge: TimeInterval = WebhookRules.defaultMaxAge
    /// `BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS=1`: allow http and private, loopback and link-local addresses.
    var allowPrivateNetworks = false
    /// `BOUNCER_WEBHOOK_CA_FILE`: a PEM CA trusted for webhook receivers besides the system roots.
    var caFile: String?
    /// `BOUNCER_WEBHOOK_CONCURRENCY`: deliveries in flight per instance.
    var concurrency = 4
    /// `BOUNCER_WEBHOOK_RETRY_BASE_SECONDS`: the first retry delay (doubling up to 1 h, ±25 % jitter).
    var retryBase: TimeInterval = 10
    /// `BOUNCER_WEBHOOK_SWEEP_SECONDS`: how often expiries by the passage of time are looked for.
    var sweepInterval: TimeInterval = 10
    /// 0 turns the dispatcher off in this instance (events still queue; another instance delivers them).
    var enabled = true
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

/// `WebhookHostResolving` over `HTTPClient.AddressPolicy`: the same resolver and classifier the dispatcher's
/// connections use.
struct SystemWebhookHostResolver: WebhookHostResolving {
    func addresses(host: String) throws -> [[UInt8]] {
        do {
            return try AddressPolicy.resolve(host: host)
        } catch {
            let message = "\(host.prefix(253)) does not resolve."
            throw DomainError(.webhookURLNotAllowed, message, underlying: error.debugDescription,
                              details: [FieldProblem(path: ["url"], message: message)])
        }
    }

    func isPublic(_ address: [UInt8]) -> Bool { AddressPolicy.isPublic(address) }

    func text(_ address: [UInt8]) -> String { AddressPolicy.text(address) }
}

/// Signs a webhook body: `v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>` per secret, comma-separated.
enum WebhookSignature {
    static func header(secrets: [String], timestamp: Int64, body: [UInt8]) -> String {
        let message = Array("\(timestamp).".utf8) + body
        return secrets.map { "v1=" + Hex.encode(HMAC.sha256(key: Array($0.utf8), message: message)) }.joined(separator: ",")
    }
}

/// Delivers the outbox. A coordinator thread leases as many due events as there are free delivery threads
/// (`PostgresWebhookStore.completeAndClaim`: each user's head event only, `FOR UPDATE SKIP LOCKED` plus a 20 s lease,
/// so instances never send one event at once) and hands them to `concurrency` delivery threads, which POST them signed.
/// Finished attempts are recorded together: the coordinator waits for the rest of the batch (at most
/// `batchWindow`), then records them and claims the next events in one transaction, one commit per batch. One more
/// thread runs the expiry sweep. An idle coordinator wakes on `NOTIFY bouncer_webhook_events` (written with each
/// event) or when the next retry is due.
final class WebhookDispatcher: Sendable {
    private let store: PostgresWebhookStore
    private let sealer: (any CredentialSealing)?
    private let http: HTTPClient
    private let settings: WebhookSettings
    private let instance: String
    private let log: @Sendable (String) -> Void
    private let listener: NotificationListener
    /// The coordinator's: an event was written (NOTIFY), a delivery finished, or shutdown.
    private let wake = DispatchSemaphore(value: 0)
    /// The delivery threads': an event to send, or shutdown.
    private let work = DispatchSemaphore(value: 0)
    private let flight = Mutex(Flight())
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private let threads: Int

    /// Between the coordinator and the delivery threads.
    private struct Flight {
        /// Claimed, waiting for a delivery thread.
        var todo: [PostgresWebhookStore.ClaimedEvent] = []
        /// Claimed and not yet finished (in `todo` or being sent).
        var busy = 0
        /// Finished, not yet recorded.
        var finished: [PostgresWebhookStore.Completion] = []
    }

    /// The lease: twice one attempt (10 s), so it only expires when an instance died mid-attempt.
    static let leaseSeconds = 20
    /// Bound on one attempt, connect and TLS included.
    static let attemptTimeout: Duration = .seconds(10)
    /// How long finished attempts wait for the rest of their batch before they are recorded.
    static let batchWindow = 0.005
    /// How soon outcomes left for later (their user's lock held by a deriver) are tried again.
    static let laterRetry = 0.05

    init(database: Database, sealer: (any CredentialSealing)?, settings: WebhookSettings,
         log: @escaping @Sendable (String) -> Void) throws {
        self.store = PostgresWebhookStore(pool: database.pool)
        self.sealer = sealer
        self.settings = settings
        self.instance = ReconcileWiring.instance
        self.log = log
        var limits = ResponseParser.Limits()
        limits.maxBodyBytes = 64 * 1024
        var allow: (@Sendable ([UInt8]) -> Bool)?
        if !settings.allowPrivateNetworks {
            allow = { @Sendable (address: [UInt8]) -> Bool in AddressPolicy.isPublic(address) }
        }
        let tls = TLSClientConfiguration(trustsSystemRoots: true, additionalCAFile: settings.caFile)
        let count = max(1, settings.concurrency)
        let configuration = HTTPClient.Configuration(
            tls: tls, connectTimeout: .seconds(5), readTimeout: Self.attemptTimeout,
            responseTimeout: Self.attemptTimeout, maxIdleConnectionsPerHost: max(2, count), limits: limits,
            retry: RetryPolicy.never, userAgent: "bouncer-webhooks", allowAddress: allow)
        self.http = try HTTPClient(configuration: configuration)
        var listenerSettings = database.pool.settings
        listenerSettings.applicationName = "bouncer-webhooks-\(getpid())"
        let wake = self.wake
        self.listener = NotificationListener(
            settings: listenerSettings, channels: ["bouncer_webhook_events"],
            handlers: NotificationListener.Handlers(
                connected: { wake.signal() }, disconnected: { _ in },
                notification: { _, _ in wake.signal() }))
        self.threads = count
    }

    /// Starts the coordinator, the delivery threads, the sweep thread and the listener.
    func start() {
        let listening = Thread { [listener, done] in
            listener.run()
            done.signal()
        }
        listening.name = "bouncer.webhooks.listen"
        listening.start()
        let coordinator = Thread { [self] in
            coordinate()
            done.signal()
        }
        coordinator.name = "bouncer.webhooks.claim"
        coordinator.start()
        for i in 0..<threads {
            let thread = Thread { [self] in
                deliveryLoop()
                done.signal()
            }
            thread.name = "bouncer.webhooks.\(i)"
            thread.start()
        }
        let sweeper = Thread { [self] in
            sweepLoop()
            done.signal()
        }
        sweeper.name = "bouncer.webhooks.sweep"
        sweeper.start()
    }

    /// Stops: no more claims; attempts in flight finish (at most 10 s) and are recorded, within `grace`. An event
    /// whose attempt is cut short, or whose record is, keeps its lease and is sent again after it expires
    /// (at-least-once, same `Bouncer-Event-Id`).
    func shutdown(grace: Duration) {
        stopping.store(true, ordering: .releasing)
        listener.shutdown()
        wake.signal()
        for _ in 0..<threads { work.signal() }
        let deadline = DispatchTime.now() + Double(grace.components.seconds)
        for _ in 0..<(threads + 3) { _ = done.wait(timeout: deadline) }
        http.shutdown()
    }

    private var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Records what finished and claims for the free delivery threads, one transaction per round; then waits for a
    /// delivery to finish (and the rest of its batch, up to `batchWindow`), an event, or the next retry.
    private func coordinate() {
        var later: [PostgresWebhookStore.Completion] = []
        while true {
            // Signals that arrived before this round are answered by it.
            while wake.wait(timeout: .now()) == .success {}
            let stop = isStopping
            let (finished, busy) = flight.withLock { f in
                defer { f.finished = [] }
                return (f.finished, f.busy)
            }
            let batch = later + finished
            let free = stop ? 0 : threads - busy
            if stop, busy == 0, batch.isEmpty { return }
            var claimedAny = false
            var failed = false
            var idle = 5.0
            if !batch.isEmpty || free > 0 {
                do {
                    let (notYet, claimed) = try store.completeAndClaim(batch, owner: instance, limit: free,
                                                                       leaseSeconds: Self.leaseSeconds)
                    later = notYet
                    if !claimed.isEmpty {
                        claimedAny = true
                        flight.withLock { f in
                            f.todo.append(contentsOf: claimed)
                            f.busy += claimed.count
                        }
                        for _ in claimed { work.signal() }
                    } else if busy == 0, later.isEmpty, let due = try store.nextDue() {
                        idle = min(max(due.timeIntervalSinceNow, 0.05), 5)
                    }
                } catch {
                    log(jsonLine("webhooks", "delivery loop: \(String(reflecting: error))"))
                    later = batch
                    failed = true
                }
            }
            if stop, later.isEmpty, flight.withLock({ $0.busy == 0 && $0.finished.isEmpty }) { return }
            if failed {
                _ = wake.wait(timeout: .now() + 1)
            } else if claimedAny || busy > 0 {
                awaitBatch(longest: later.isEmpty ? idle : Self.laterRetry)
            } else {
                // Outcomes a deriver holds back are tried again soon (it commits within a batch's time).
                _ = wake.wait(timeout: .now() + (later.isEmpty ? idle : Self.laterRetry))
            }
        }
    }

    /// Waits up to `longest` for a delivery to finish, then up to `batchWindow` more for the others in flight.
    private func awaitBatch(longest: Double) {
        guard wake.wait(timeout: .now() + longest) == .success else { return }
        let deadline = DispatchTime.now() + Self.batchWindow
        while flight.withLock({ $0.busy > 0 }), !isStopping {
            guard wake.wait(timeout: deadline) == .success else { return }
        }
    }

    private func deliveryLoop() {
        while true {
            work.wait()
            guard let event = flight.withLock({ f in f.todo.isEmpty ? nil : f.todo.removeFirst() }) else {
                if isStopping { return }
                continue
            }
            let completion = deliver(event)
            flight.withLock { f in
                f.busy -= 1
                f.finished.append(completion)
            }
            wake.signal()
        }
    }

    private func sweepLoop() {
        while !isStopping {
            do {
                // Several batches while there is work (a backlog after downtime), then wait.
                var rounds = 0
                while try store.sweep(limit: 100) > 0, rounds < 50, !isStopping { rounds += 1 }
            } catch {
                log(jsonLine("webhooks", "sweep: \(String(reflecting: error))"))
            }
            let seconds = settings.sweepInterval
            var waited = 0.0
            while waited < seconds, !isStopping {
                usleep(UInt32(min(0.1, seconds) * 1_000_000))
                waited += 0.1
            }
        }
    }

    /// One attempt: sign, POST within 10 s; what to record.
    private func deliver(_ event: PostgresWebhookStore.ClaimedEvent) -> PostgresWebhookStore.Completion {
        let startedAt = Date()
        let clock = ContinuousClock.now
        var statusCode: Int?
        var problem: String?
        do {
            let secrets = try WebhookAdministration.signingSecrets(event.endpoint, sealer: try requireSealer(), at: startedAt)
            _ = try WebhookRules.parse(url: event.endpoint.endpoint.url, allowPrivateNetworks: settings.allowPrivateNetworks).get()
            let body = try Self.body(event)
            let timestamp = Int64(startedAt.timeIntervalSince1970.rounded(.down))
            let request = HTTPClientRequest(
                method: "POST", url: event.endpoint.endpoint.url,
                headers: [("Content-Type", "application/json"), ("Bouncer-Event-Id", event.eventId),
                          ("Bouncer-Timestamp", String(timestamp)),
                          ("Bouncer-Signature", WebhookSignature.header(secrets: secrets, timestamp: timestamp, body: body))],
                body: body, idempotent: false)
            let response = try http.execute(request, deadline: .now + Self.attemptTimeout)
            statusCode = response.status
            if !WebhookRules.isDelivered(status: response.status) { problem = "HTTP \(response.status)" }
        } catch let error as HTTPClientError {
            problem = error.code == .timeout ? "timeout after 10 s" : error.description
        } catch let error as DomainError {
            problem = error.message
        } catch {
            problem = "\(error)"
        }
        let elapsed = ContinuousClock.now - clock
        let durationMs = Int(elapsed.components.seconds) * 1000 + Int(elapsed.components.attoseconds / 1_000_000_000_000_000)
        let at = Date()
        let outcome: PostgresWebhookStore.AttemptOutcome
        if let problem {
            let delay = WebhookRules.retryDelay(afterAttempt: event.attempt, base: settings.retryBase,
                                                jitter: Double.random(in: 0..<1))
            let failed = at.timeIntervalSince(event.retryWindowStart) >= settings.maxAge
            let lastChance = event.retryWindowStart + settings.maxAge
            let retryAt = min(at + delay, max(lastChance, at))
            outcome = .notDelivered(status: statusCode, error: problem, retryAt: retryAt, failed: failed)
        } else {
            outcome = .delivered(status: statusCode ?? 200)
        }
        return PostgresWebhookStore.Completion(event: event, at: startedAt, durationMs: durationMs, outcome: outcome)
    }

    private func requireSealer() throws -> any CredentialSealing {
        guard let sealer else {
            throw DomainError(.encryptionKeyMissing, "BOUNCER_ENCRYPTION_KEY is not set: the webhook secret cannot be opened.")
        }
        return sealer
    }

    /// `{"id","type","created_at","project_id","user_id","data"}`, compact, keys in this order.
    static func body(_ event: PostgresWebhookStore.ClaimedEvent) throws -> [UInt8] {
        let data = try JSONParser.parse(event.dataJSON)
        return JSONValue.object(JSONObject([
            ("id", .string(event.eventId)), ("type", .string(event.type)),
            ("created_at", .string(RFC3339.string(secondsSince1970: event.createdAt.timeIntervalSince1970))),
            ("project_id", .string(event.projectId.uuidString.lowercased())),
            ("user_id", event.userId.map(JSONValue.string) ?? .null), ("data", data),
        ])).serialized()
    }
}
