import Glibc
import Synchronization

/// State shared by the event loops and workers of one server: immutable settings plus atomics.
final class ServerCore: Sendable {
    let configuration: HTTPServer.Configuration
    let router: Router
    let accessLog: (@Sendable (String) -> Void)?
    /// Runs after routing, before the handler is queued; a response returned here is sent instead.
    let admission: (@Sendable (Request) -> Response?)?
    /// Told once per response (on the access-log path), e.g. for metrics.
    let observer: (@Sendable (RequestRecord) -> Void)?
    let pool: WorkerPool
    let draining = Atomic<Bool>(false)
    /// Monotonic ns after which loops force-close what is left; set by `shutdown`.
    let drainDeadline = Atomic<UInt64>(UInt64.max)
    let connectionCount = Atomic<Int>(0)
    /// Open connections per client, for `maxConnectionsPerClient`.
    let clientConnections: ConnectionsPerClient
    /// The most input bytes one connection has buffered at once (diagnostics: proves the per-connection bound).
    let peakConnectionInputBytes = Atomic<Int>(0)
    private let requestCounter = Atomic<UInt64>(0)
    private let requestIDPrefix: String

    init(
        configuration: HTTPServer.Configuration, router: Router, accessLog: (@Sendable (String) -> Void)?,
        admission: (@Sendable (Request) -> Response?)? = nil, observer: (@Sendable (RequestRecord) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.router = router
        self.accessLog = accessLog
        self.admission = admission
        self.observer = observer
        self.clientConnections = ConnectionsPerClient(limit: configuration.maxConnectionsPerClient)
        self.pool = WorkerPool(threads: configuration.workerCount, capacity: configuration.queueDepth)
        var rng = SystemRandomNumberGenerator()
        let random: UInt64 = rng.next()
        let prefix = String(random & 0xFFFF_FFFF_FFFF, radix: 16)
        requestIDPrefix = String(repeating: "0", count: max(0, 12 - prefix.count)) + prefix + "-"
    }

    var isDraining: Bool { draining.load(ordering: .acquiring) }

    /// Whether `peer` (normalized) is one of the configured trusted proxies.
    func isTrustedProxy(_ peer: String) -> Bool {
        guard !configuration.trustedProxies.isEmpty, let address = IPAddress(peer) else { return false }
        return configuration.trustedProxies.contains { $0.contains(address) }
    }

    /// Raises `peakConnectionInputBytes` to `bytes` if larger (a rare CAS: only when a new peak is seen).
    func notePeakInput(_ bytes: Int) {
        var current = peakConnectionInputBytes.load(ordering: .relaxed)
        while bytes > current {
            let (exchanged, original) = peakConnectionInputBytes.compareExchange(
                expected: current, desired: bytes, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// A process-unique id: a random per-server prefix plus a counter.
    func nextRequestID() -> String {
        let n = requestCounter.wrappingAdd(1, ordering: .relaxed).newValue
        return requestIDPrefix + String(n, radix: 16)
    }

    /// The incoming id when it is sane, else a fresh one.
    func requestID(for incoming: String?) -> String {
        if let incoming, RequestID.isSane(incoming) { return incoming }
        return nextRequestID()
    }

    /// Runs a handler; a thrown error becomes the generic 500 (domain errors are mapped by the API
    /// module before they reach here). The error's type name is returned for the access log only.
    func invoke(_ handler: Handler, _ request: Request) -> (Response, String?) {
        do {
            return (try handler(request), nil)
        } catch {
            let response = Response.error(
                500, message: "Internal error", code: "INTERNAL_ERROR",
                suggestion: "Retry later; if it keeps failing, report request id \(request.requestID).")
            return (response, String(describing: type(of: error)))
        }
    }

    /// One JSON access-log line per request (never bodies, keys or raw paths: only the template),
    /// and the same values to the observer: every response passes through here exactly once.
    func log(
        method: String, template: String, status: Int, bytes: Int, startedAt: UInt64,
        requestID: String, remote: String, errorType: String? = nil
    ) {
        guard accessLog != nil || observer != nil else { return }
        let now = monotonicNanos()
        let nanos = now > startedAt ? now - startedAt : 0
        observer?(RequestRecord(method: method, routeTemplate: template, status: status, bytes: bytes,
                                durationNanoseconds: nanos, requestID: requestID, remoteAddress: remote))
        guard let accessLog else { return }
        let micros = nanos / 1000
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        var line = #"{"ts":"# + Self.decimal(Int(wall.tv_sec), fraction: Int(wall.tv_nsec / 1_000_000))
        line += #","method":"# + JSONText.quoted(method)
        line += #","path":"# + JSONText.quoted(template)
        line += #","status":\#(status),"bytes":\#(bytes),"duration_ms":\#(Self.decimal(Int(micros / 1000), fraction: Int(micros % 1000))),"request_id":"#
        line += JSONText.quoted(requestID)
        line += #","remote":"# + JSONText.quoted(remote)
        if let errorType { line += #","error":"# + JSONText.quoted(errorType) }
        line += "}"
        accessLog(line)
    }

    /// `whole.fff` without Foundation's printf (this runs once per request).
    static func decimal(_ whole: Int, fraction: Int) -> String {
        let f = String(fraction)
        return String(whole) + "." + String(repeating: "0", count: max(0, 3 - f.count)) + f
    }
}
