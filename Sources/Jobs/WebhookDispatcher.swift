import Crypto
import Dispatch
public import Domain
public import Foundation
import Glibc
import HTTPClient
import JSON
import Postgres
import Primitives
public import Storage
import Synchronization

/// Webhook settings of `bouncer serve` (`BOUNCER_WEBHOOK_*`).
public struct WebhookSettings: Sendable, Equatable {
    /// `BOUNCER_WEBHOOK_MAX_AGE_SECONDS`: how long an undelivered event is retried before it is marked failed.
    public var maxAge: TimeInterval = WebhookRules.defaultMaxAge
    /// `BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS=1`: allow http and private, loopback and link-local addresses.
    public var allowPrivateNetworks = false
    /// `BOUNCER_WEBHOOK_CA_FILE`: a PEM CA trusted for webhook receivers besides the system roots.
    public var caFile: String?
    /// `BOUNCER_WEBHOOK_CONCURRENCY`: deliveries in flight per instance.
    public var concurrency = 4
    /// `BOUNCER_WEBHOOK_RETRY_BASE_SECONDS`: the first retry delay (doubling up to 1 h, ±25 % jitter).
    public var retryBase: TimeInterval = 10
    /// `BOUNCER_WEBHOOK_SWEEP_SECONDS`: how often expiries by the passage of time are looked for.
    public var sweepInterval: TimeInterval = 10
    /// 0 turns the dispatcher off in this instance (events still queue; another instance delivers them).
    public var enabled = true

    /// The defaults.
    public init() {}
}

/// `WebhookHostResolving` over `HTTPClient.AddressPolicy`: the same resolver and classifier the dispatcher's
/// connections use.
public struct SystemWebhookHostResolver: WebhookHostResolving {
    /// The resolver.
    public init() {}

    /// `host`'s addresses; a host that does not resolve is a `webhookURLNotAllowed` problem.
    public func addresses(host: String) throws -> [[UInt8]] {
        do {
            return try AddressPolicy.resolve(host: host)
        } catch {
            let message = "\(host.prefix(253)) does not resolve."
            throw DomainError(.webhookURLNotAllowed, message, underlying: error.debugDescription,
                              details: [FieldProblem(path: ["url"], message: message)])
        }
    }

    /// Whether `address` is publicly routable.
    public func isPublic(_ address: [UInt8]) -> Bool { AddressPolicy.isPublic(address) }

    /// `address` as text.
    public func text(_ address: [UInt8]) -> String { AddressPolicy.text(address) }
}

/// Signs a webhook body: `v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>` per secret, comma-separated.
public enum WebhookSignature {
    /// The `Bouncer-Signature` header of `body` sent at `timestamp`, one `v1=` entry per secret.
    public static func header(secrets: [String], timestamp: Int64, body: [UInt8]) -> String {
        let message = Array("\(timestamp).".utf8) + body
        return secrets.map { "v1=" + Hex.encode(HMAC.sha256(key: Array($0.utf8), message: message)) }.joined(separator: ",")
    }
}

/// Delivers the outbox. A coordinator thread leases up to `pipelineDepth` due events per delivery thread, less those
/// not finished yet (`PostgresWebhookStore.completeAndClaim`: each user's head event only, `FOR UPDATE SKIP LOCKED`
/// plus a 20 s lease, so instances never send one event at once) and hands them to `concurrency` delivery threads,
/// which POST them signed, one at a time each. An event that waited for a thread until its lease has less than one
/// attempt left is not sent (its lease ends and it is claimed again), so an attempt always ends within its lease.
/// Finished attempts are recorded together: the coordinator waits for the rest of the batch (at most
/// `batchWindow`), then records them and claims the next events in one transaction, one commit per batch. Like the
/// deriver it yields to receipts: after a round during which this instance's receipts kept committing, the coordinator
/// rests a multiple of that round's transaction before the next (`ReceiptLoad`), so in a burst the outbox
/// waits (events are late, not lost: their leases outlast the rest) and the receipts keep PostgreSQL. One more
/// thread runs the expiry sweep. An idle coordinator wakes on `NOTIFY bouncer_webhook_events` (written with each
/// event) or when the next retry is due.
public final class WebhookDispatcher: Service {
    private let store: PostgresWebhookStore
    private let sealer: (any CredentialSealing)?
    private let http: HTTPClient
    private let settings: WebhookSettings
    private let instance: String
    private let log: @Sendable (String) -> Void
    /// Counts each delivered event toward its project's account; nil: not counted.
    private let meter: UsageMeter?
    private let listener: NotificationListener
    /// The coordinator's: an event was written (NOTIFY), a delivery finished, or shutdown.
    private let wake = DispatchSemaphore(value: 0)
    /// The delivery threads': an event to send, or shutdown.
    private let work = DispatchSemaphore(value: 0)
    private let flight = Mutex(Flight())
    private let stopping = Atomic<Bool>(false)
    private let threads: Int
    /// What this instance's receipts did so far (`WebhookDeriver.receiptLoad`); nil: never yield.
    private let receiptLoad: (@Sendable () -> ReceiptLoad)?
    private let jobs = Mutex<[Job]>([])

    /// Between the coordinator and the delivery threads.
    private struct Flight {
        /// Claimed, waiting for a delivery thread; each to be sent before its time (`sendWindow` after the claim).
        var todo: [(event: PostgresWebhookStore.ClaimedEvent, sendBy: DispatchTime)] = []
        /// Claimed and not yet finished (in `todo` or being sent).
        var busy = 0
        /// Finished, not yet recorded.
        var finished: [PostgresWebhookStore.Completion] = []
    }

    /// The lease: twice one attempt (10 s), so it only expires when an instance died mid-attempt.
    static let leaseSeconds = 20
    /// Bound on one attempt, connect and TLS included.
    static let attemptTimeout: Duration = .seconds(10)
    /// Claimed events per delivery thread (being sent or waiting): a batch records up to `concurrency` × this many
    /// attempts in one call and one commit, instead of `concurrency`.
    static let pipelineDepth = 4
    /// How long after its claim an event may still be sent: its lease less one attempt.
    static let sendWindow = Double(leaseSeconds) - 10
    /// How long finished attempts wait for the rest of their batch before they are recorded.
    static let batchWindow = 0.005
    /// How soon outcomes left for later (their user's lock held by a deriver) are tried again.
    static let laterRetry = 0.05

    /// A dispatcher over `database`; throws when `settings.caFile` does not load. `start` starts its threads.
    public init(database: Database, sealer: (any CredentialSealing)?, settings: WebhookSettings,
                meter: UsageMeter? = nil, receiptLoad: (@Sendable () -> ReceiptLoad)? = nil,
                log: @escaping @Sendable (String) -> Void) throws {
        self.meter = meter
        self.receiptLoad = receiptLoad
        self.store = PostgresWebhookStore(pool: database.pool)
        self.sealer = sealer
        self.settings = settings
        self.instance = ProcessIdentity.instance
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

    /// `webhook-dispatcher`.
    public var name: String { "webhook-dispatcher" }

    /// Starts the listener, the coordinator, the delivery threads and the sweep thread.
    public func start() {
        let listener = self.listener
        var jobs = [
            Job(name: "bouncer.webhooks.listen", onStop: { listener.shutdown() }) { _ in
                listener.run()
                return .finished
            },
            Job(name: "bouncer.webhooks.claim", onStop: { [wake] in wake.signal() }) { [self] _ in
                coordinate()
                return .finished
            },
        ]
        for i in 0..<threads {
            jobs.append(Job(name: "bouncer.webhooks.\(i)", onStop: { [work] in work.signal() }) { [self] _ in
                deliveryLoop()
                return .finished
            })
        }
        // Several batches while there is work (a backlog after downtime), then a wait.
        jobs.append(Job(name: "bouncer.webhooks.sweep", interval: .milliseconds(Int64(settings.sweepInterval * 1000))) {
            [self] job in
            sweep(job)
            return .wait
        })
        self.jobs.withLock { $0 = jobs }
        jobs.forEach { $0.start() }
    }

    /// Stops: no more claims; attempts in flight finish (at most 10 s) and are recorded, within `grace`. An event
    /// whose attempt is cut short, or whose record is, keeps its lease and is sent again after it expires
    /// (at-least-once, same `Bouncer-Event-Id`).
    public func stop(grace: Duration) {
        stopping.store(true, ordering: .releasing)
        let jobs = self.jobs.withLock { $0 }
        jobs.forEach { $0.requestStop() }
        let deadline = DispatchTime.now() + Job.seconds(grace)
        for job in jobs { job.awaitStop(until: deadline) }
        http.shutdown()
    }

    /// Whether any of the dispatcher's threads runs.
    public var isRunning: Bool { jobs.withLock { $0 }.contains { $0.isRunning } }

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
            let free = stop ? 0 : max(0, threads * Self.pipelineDepth - busy)
            if stop, busy == 0, batch.isEmpty { return }
            var claimedAny = false
            var failed = false
            var idle = 5.0
            if !batch.isEmpty || free > 0 {
                do {
                    // Before the claim's transaction starts, so before the lease's start (its now()).
                    let started = DispatchTime.now()
                    let sendBy = started + Self.sendWindow
                    let load = receiptLoad?()
                    let (notYet, claimed) = try store.completeAndClaim(batch, owner: instance, limit: free,
                                                                       leaseSeconds: Self.leaseSeconds)
                    if let load, let now = receiptLoad?() {
                        // Receipts committed meanwhile: a burst (the rest is well within the lease: an event waits
                        // at most that long more to be recorded).
                        let took = Double(DispatchTime.now().uptimeNanoseconds &- started.uptimeNanoseconds) / 1e9
                        rest(ReceiptLoad.rest(after: took, from: load, to: now))
                    }
                    later = notYet
                    if !claimed.isEmpty {
                        claimedAny = true
                        flight.withLock { f in
                            f.todo.append(contentsOf: claimed.map { (event: $0, sendBy: sendBy) })
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

    /// Sleeps `seconds` (a yield), ended early only by stop; wakes meanwhile stay for the next round.
    private func rest(_ seconds: Double) {
        guard seconds > 0 else { return }
        let deadline = DispatchTime.now() + seconds
        while !isStopping, DispatchTime.now() < deadline {
            Thread.sleep(forTimeInterval: min(seconds, 0.02))
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
            guard let next = flight.withLock({ f in f.todo.isEmpty ? nil : f.todo.removeFirst() }) else {
                if isStopping { return }
                continue
            }
            let event = next.event
            guard DispatchTime.now() < next.sendBy else {
                // Its lease could end mid-attempt: not sent, nothing recorded; claimed again when the lease ends.
                flight.withLock { $0.busy -= 1 }
                wake.signal()
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

    private func sweep(_ job: Job) {
        do {
            var rounds = 0
            while try store.sweep(limit: 100) > 0, rounds < 50, !job.isStopping { rounds += 1 }
        } catch {
            log(jsonLine("webhooks", "sweep: \(String(reflecting: error))"))
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
            meter?.count(.webhooksDelivered, project: event.projectId, at: at)
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
    public static func body(_ event: PostgresWebhookStore.ClaimedEvent) throws -> [UInt8] {
        let data = try JSONParser.parse(event.dataJSON)
        return JSONValue.object(JSONObject([
            ("id", .string(event.eventId)), ("type", .string(event.type)),
            ("created_at", .string(RFC3339.string(secondsSince1970: event.createdAt.timeIntervalSince1970))),
            ("project_id", .string(event.projectId.lowercasedText)),
            ("user_id", event.userId.map(JSONValue.string) ?? .null), ("data", data),
        ])).serialized()
    }
}
