import Domain
public import AppStoreJWS
import Foundation
import HTTPCore
import Metrics
public import Postgres
public import Storage
import Synchronization
public import Jobs
public import Verification

/// Every series `GET /metrics` exposes, and the recording calls the server, the verifier adapter and the
/// rate limiter make. Labels carry route templates, methods, statuses, error codes and notification types:
/// never keys, user ids, tokens or raw paths. Every label takes values from a fixed set, whatever a client
/// sends: a method outside the routed seven is `other`, and a notification type or subtype Apple does not
/// document (Xcode-signed notifications can carry any string) is `unknown`, so forgeries add no series.
public final class ServiceMetrics: VerificationMetrics {
    let registry = MetricsRegistry()
    private let requests: Counter
    private let durations: Histogram
    private let verifications: Counter
    private let notifications: Counter
    private let chainCache: Counter
    private let rateLimited: Counter
    private let openConnections = Mutex<(@Sendable () -> Int)?>(nil)
    private let accessLogDropped = Mutex<(@Sendable () -> Int)?>(nil)
    private let caches = Mutex<(@Sendable () -> CacheStatistics)?>(nil)
    private let deriveLag = Mutex<(@Sendable () -> Double)?>(nil)
    private let receiptBatches = Mutex<(@Sendable () -> PostgresPurchaseStore.BatchCounts)?>(nil)
    private let auditGaps = Mutex<(@Sendable () -> Int)?>(nil)

    /// What the caches report at scrape time (`Sources/Jobs/Caches.swift`).
    public typealias CacheStatistics = Caches.Statistics

    /// The scopes `bouncer_rate_limited_total` starts with at zero (so `rate()` has a series to work on).
    static let rateLimitScopes = ["public_key", "client", "admin", "secret_key"]

    /// Seconds; from a sub-millisecond health check to the 10 s handler timeout.
    static let durationBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// - Parameter poolStatistics: read at scrape time (in memory, one short lock); nil without a database.
    public init(poolStatistics: (@Sendable () -> ConnectionPool.Statistics)?) {
        requests = registry.counter(
            "bouncer_http_requests_total", help: "HTTP responses by route template, method and status.",
            labels: ["route", "method", "status"])
        durations = registry.histogram(
            "bouncer_http_request_duration_seconds",
            help: "Time from a request's arrival to its response being ready, by route template and method.",
            labels: ["route", "method"], buckets: Self.durationBuckets)
        verifications = registry.counter(
            "bouncer_verifications_total",
            help: "Signed-data verifications by kind (transaction, notification) and result (ok or the error code).",
            labels: ["kind", "result"])
        notifications = registry.counter(
            "bouncer_notifications_total",
            help: "Verified App Store Server Notifications by notificationType and subtype (none when absent; "
                + "unknown for values Apple does not document).",
            labels: ["type", "subtype"])
        chainCache = registry.counter(
            "bouncer_chain_cache_total", help: "Verified certificate-chain cache lookups (hit or miss).",
            labels: ["result"])
        rateLimited = registry.counter(
            "bouncer_rate_limited_total", help: "Requests answered 429 by the per-process rate limits, by scope.",
            labels: ["scope"])
        for scope in Self.rateLimitScopes { rateLimited.increment([scope], by: 0) }
        for result in ["hit", "miss"] { chainCache.increment([result], by: 0) }
        for kind in ["transaction", "notification"] { verifications.increment([kind, "ok"], by: 0) }

        if let poolStatistics {
            registry.callback(
                "bouncer_db_pool_connections", help: "PostgreSQL pool connections by state.", type: .gauge,
                labels: ["state"]) {
                    let s = poolStatistics()
                    return [MetricSample(["idle"], Double(s.idle)), MetricSample(["in_use"], Double(s.inUse))]
                }
            registry.callback(
                "bouncer_db_pool_waiting", help: "Threads waiting for a PostgreSQL connection right now.",
                type: .gauge) { [MetricSample([], Double(poolStatistics().waiting))] }
            registry.callback(
                "bouncer_db_pool_waits_total", help: "Connection checkouts that had to wait.", type: .counter) {
                    [MetricSample([], Double(poolStatistics().waits))]
                }
            registry.callback(
                "bouncer_db_pool_timeouts_total", help: "Connection checkouts that gave up (answered 503).",
                type: .counter) { [MetricSample([], Double(poolStatistics().timeouts))] }
        }
        registry.callback(
            "bouncer_process_resident_memory_bytes", help: "Resident set size of this process.", type: .gauge) {
                Self.residentMemoryBytes().map { [MetricSample([], Double($0))] } ?? []
            }
        registry.callback(
            "bouncer_cache_live", help: "1 while projects and reads are served from memory (the channel listens).",
            type: .gauge) { [weak self] in
                self?.caches.withLock { $0 }.map { [MetricSample([], $0().live ? 1 : 0)] } ?? []
            }
        registry.callback(
            "bouncer_read_cache_total", help: "Subscription reads answered from memory (hit) or by a query (miss).",
            type: .counter, labels: ["result"]) { [weak self] in
                self?.caches.withLock { $0 }.map { source in
                    let s = source()
                    return [MetricSample(["hit"], Double(s.readHits)), MetricSample(["miss"], Double(s.readMisses))]
                } ?? []
            }
        registry.callback(
            "bouncer_read_cache_refreshes_total",
            help: "Background refreshes of cached subscription reads past their refresh point, by outcome.",
            type: .counter, labels: ["result"]) { [weak self] in
                self?.caches.withLock { $0 }.map { source in
                    let r = source().readRefreshes
                    return [MetricSample(["refreshed"], Double(r.refreshed)),
                            MetricSample(["discarded"], Double(r.discarded)),
                            MetricSample(["dropped"], Double(r.dropped)), MetricSample(["failed"], Double(r.failed))]
                } ?? []
            }
        registry.callback(
            "bouncer_cache_announcements_total", help: "NOTIFY payloads sent to the other instances' caches.",
            type: .counter) { [weak self] in
                self?.caches.withLock { $0 }.map { [MetricSample([], Double($0().announcements))] } ?? []
            }
        registry.callback(
            "bouncer_webhook_derive_lag_seconds",
            help: "Age of the oldest of this instance's commits whose facts the deriver has not yet turned into webhook "
                + "events and rollups (0 when caught up; grows while it yields to a burst of receipts).",
            type: .gauge) { [weak self] in
                self?.deriveLag.withLock { $0 }.map { [MetricSample([], $0())] } ?? []
            }
        registry.callback(
            "bouncer_receipt_batches_total",
            help: "Group commits of receipts (one statement and one durable commit each).", type: .counter) {
                [weak self] in
                self?.receiptBatches.withLock { $0 }.map { [MetricSample([], Double($0().batches))] } ?? []
            }
        registry.callback(
            "bouncer_receipt_batch_seconds_total",
            help: "Time spent writing group commits of receipts, each from its statement sent to its commit "
                + "acknowledged (divided by the batches: how long one takes).", type: .counter) { [weak self] in
                self?.receiptBatches.withLock { $0 }.map { [MetricSample([], $0().writingSeconds)] } ?? []
            }
        registry.callback(
            "bouncer_receipts_batched_total",
            help: "Receipts committed in a group commit, by whether they waited for a batch slot (yes: the write path "
                + "was saturated when they came).", type: .counter, labels: ["waited"]) { [weak self] in
                self?.receiptBatches.withLock { $0 }.map { source in
                    let c = source()
                    return [MetricSample(["no"], Double(c.receipts &- c.waited)), MetricSample(["yes"], Double(c.waited))]
                } ?? []
            }
        registry.callback(
            "bouncer_http_open_connections", help: "Open client connections.", type: .gauge) { [weak self] in
                self?.openConnections.withLock { $0 }.map { [MetricSample([], Double($0()))] } ?? []
            }
        registry.callback(
            "bouncer_access_log_dropped_lines_total",
            help: "Access-log lines dropped because the log buffer was full (its reader too slow).", type: .counter) {
                [weak self] in
                self?.accessLogDropped.withLock { $0 }.map { [MetricSample([], Double($0()))] } ?? []
            }
        registry.callback(
            "bouncer_audit_missing_total",
            help: "Changing admin requests answered 2xx whose store wrote no audit entry (a bug; should stay 0).",
            type: .counter) { [weak self] in
                self?.auditGaps.withLock { $0 }.map { [MetricSample([], Double($0()))] } ?? []
            }
    }

    /// Where `bouncer_audit_missing_total` reads from (the API's `AuditGaps`).
    public func attach(auditGaps source: @escaping @Sendable () -> Int) {
        auditGaps.withLock { $0 = source }
    }

    /// Where `bouncer_access_log_dropped_lines_total` reads from (the access-log writer's count).
    func attach(accessLogDropped source: @escaping @Sendable () -> Int) {
        accessLogDropped.withLock { $0 = source }
    }

    /// Where `bouncer_webhook_derive_lag_seconds` reads from (`WebhookDeriver.lag`).
    public func attach(deriveLag source: @escaping @Sendable () -> Double) {
        deriveLag.withLock { $0 = source }
    }

    /// Where `bouncer_receipt_batches_total` and `bouncer_receipts_batched_total` read from (`Caches.receiptBatches`).
    public func attach(receiptBatches source: @escaping @Sendable () -> PostgresPurchaseStore.BatchCounts) {
        receiptBatches.withLock { $0 = source }
    }

    /// Where the `bouncer_cache_*` and `bouncer_read_cache_total` series read from.
    public func attach(caches source: @escaping @Sendable () -> CacheStatistics) {
        caches.withLock { $0 = source }
    }

    /// Where `bouncer_http_open_connections` reads from (the server exists only after the routes are built).
    func attach(openConnections source: @escaping @Sendable () -> Int) {
        openConnections.withLock { $0 = source }
    }

    /// The HTTP server's observer: one call per response.
    func observe(_ record: RequestRecord) {
        let method = Self.methodLabel(record.method)
        requests.increment([record.routeTemplate, method, String(record.status)])
        durations.observe(record.durationSeconds, [record.routeTemplate, method])
    }

    /// The methods the router serves, and `-` for unparseable requests: any other token (the parser accepts up to
    /// 20 bytes of anything a client sends) is `other`.
    static let methodLabels: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "-"]

    /// `method` when it is one of `methodLabels`, else `other`.
    static func methodLabel(_ method: String) -> String { methodLabels.contains(method) ? method : "other" }

    /// One verification by the App Store adapter; `result` is `ok` or the error code.
    public func verification(kind: String, result: String) { verifications.increment([kind, result]) }

    /// One chain-cache lookup (Xcode-signed data has no chain and is not counted).
    func chainCacheLookup(hit: Bool) { chainCache.increment([hit ? "hit" : "miss"]) }

    /// One verified notification, by Apple's documented type and subtype (`unknown` otherwise, `none` when absent).
    func notification(type: NotificationType, subtype: NotificationSubtype?) {
        let subtypeLabel = subtype.map { $0.isDocumented ? $0.rawValue : "unknown" } ?? "none"
        notifications.increment([type.isDocumented ? type.rawValue : "unknown", subtypeLabel])
    }

    /// One 429.
    func rateLimited(scope: String) { rateLimited.increment([scope]) }

    /// The text exposition of every series.
    func render() -> String { registry.render() }

    /// `/proc/self/statm`'s resident pages × page size (procfs: no disk I/O).
    static func residentMemoryBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        let (bytes, overflow) = pages.multipliedReportingOverflow(by: Int(sysconf(Int32(_SC_PAGESIZE))))
        return overflow ? nil : bytes
    }
}

extension ServiceMetrics {
    /// A successful verification: `ok`, the chain cache's part (Xcode data has no chain), the notification type.
    public func verified(kind: String, _ details: VerificationDetails, notification payload: NotificationPayload? = nil) {
        verification(kind: kind, result: "ok")
        if !details.isXcodeSigned { chainCacheLookup(hit: details.chainCacheHit) }
        if let payload { notification(type: payload.notificationType, subtype: payload.subtype) }
    }
}
