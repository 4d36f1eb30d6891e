import Glibc
import JSON
import Synchronization

/// State shared by the event loops and workers of one server: immutable settings plus atomics.
final class ServerCore: Sendable {
    let configuration: HTTPServer.Configuration
    let router: Router
    let accessLog: (@Sendable (String) -> Void)?
    /// Runs after routing, before the handler is queued; an error returned here is sent instead.
    let admission: (@Sendable (Request) -> HTTPError?)?
    /// Told once per response (on the access-log path), e.g. for metrics.
    let observer: (@Sendable (RequestRecord) -> Void)?
    let pool: WorkerPool
    /// Answers requests no route matches (instead of 404/405), when set.
    let unmatched: Handler?
    /// The certificate and key, when the listener speaks TLS.
    let tls: TLSIdentity?
    let draining = Atomic<Bool>(false)
    /// Monotonic ns after which loops force-close what is left; set by `shutdown`.
    let drainDeadline = Atomic<UInt64>(UInt64.max)
    let connectionCount = Atomic<Int>(0)
    /// Open connections per client, for `maxConnectionsPerClient`.
    let clientConnections: ConnectionsPerClient
    /// The most input bytes one connection has buffered at once (diagnostics: proves the per-connection bound).
    let peakConnectionInputBytes = Atomic<Int>(0)
    private let requestCounter = Atomic<UInt64>(0)
    /// 12 hex digits and a dash: a random per-server prefix.
    private let requestIDPrefix: [UInt8]

    init(
        configuration: HTTPServer.Configuration, router: Router, accessLog: (@Sendable (String) -> Void)?,
        admission: (@Sendable (Request) -> HTTPError?)? = nil, observer: (@Sendable (RequestRecord) -> Void)? = nil,
        unmatched: Handler? = nil
    ) {
        self.unmatched = unmatched
        self.tls = configuration.tls.map { TLSIdentity(configuration: $0) }
        self.configuration = configuration
        self.router = router
        self.accessLog = accessLog
        self.admission = admission
        self.observer = observer
        self.clientConnections = ConnectionsPerClient(limit: configuration.maxConnectionsPerClient)
        self.pool = WorkerPool(threads: configuration.workerCount, capacity: configuration.queueDepth)
        var rng = SystemRandomNumberGenerator()
        let random: UInt64 = rng.next()
        var prefix: [UInt8] = []
        prefix.appendHex((random & 0xFFFF_FFFF_FFFF) | 1 << 48)  // the set bit 48 keeps leading zeros: 13 digits, the first dropped
        prefix.removeFirst()
        prefix.append(UInt8(ascii: "-"))
        requestIDPrefix = prefix
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
        // One allocation (the String), no intermediate strings: this runs for every request without an id.
        return String(unsafeUninitializedCapacity: requestIDPrefix.count + 16) { buffer in
            var end = buffer.initialize(fromContentsOf: requestIDPrefix)
            let width = n == 0 ? 1 : (67 - n.leadingZeroBitCount) / 4
            for shift in stride(from: (width - 1) * 4, through: 0, by: -4) where end < buffer.count {
                let nibble = UInt8(truncatingIfNeeded: (n >> UInt64(shift)) & 0xF)
                buffer[end] = nibble < 10 ? nibble &+ 0x30 : nibble &+ 0x57
                end += 1
            }
            return end
        }
    }

    /// The incoming id when it is sane, else a fresh one.
    func requestID(for incoming: String?) -> String {
        if let incoming, RequestID.isSane(incoming) { return incoming }
        return nextRequestID()
    }

    /// Runs a handler as the server does: a thrown `HTTPError` is rendered with the request id, anything else
    /// becomes 500 `INTERNAL_ERROR` (no internals in the body). The other error's type name is returned for the
    /// access log only; the layer that knows the cause (the API) logs it.
    func invoke(_ handler: Handler, _ request: Request) -> (Response, String?) {
        Self.invoke(handler, request, retryAfterSeconds: configuration.retryAfterSeconds)
    }

    /// `invoke` without a server, for in-process tests of handlers.
    static func invoke(_ handler: Handler, _ request: Request, retryAfterSeconds: Int) -> (Response, String?) {
        do {
            return (try handler(request), nil)
        } catch let error as HTTPError {
            return (error.response(requestID: request.requestID, retryAfterSeconds: retryAfterSeconds), nil)
        } catch {
            let response = HTTPError.internalError.response(
                requestID: request.requestID, retryAfterSeconds: retryAfterSeconds)
            return (response, String(describing: type(of: error)))
        }
    }

    /// `error` as the response the server sends, with the configured `Retry-After` for 503s.
    func render(_ error: HTTPError, requestID: String) -> Response {
        error.response(requestID: requestID, retryAfterSeconds: configuration.retryAfterSeconds)
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
        var line = JSONWriter(reservingCapacity: 256)
        line.writeRaw(#"{"ts":"#)
        line.writeRaw { Self.appendMillis(whole: UInt64(max(0, wall.tv_sec)), thousandths: UInt64(max(0, wall.tv_nsec / 1_000_000)), to: &$0) }
        line.writeRaw(#","method":"#)
        line.writeString(method)
        line.writeRaw(#","path":"#)
        line.writeString(template)
        line.writeRaw(#","status":"#)
        line.writeRaw { $0.appendDecimal(status) }
        line.writeRaw(#","bytes":"#)
        line.writeRaw { $0.appendDecimal(bytes) }
        line.writeRaw(#","duration_ms":"#)
        line.writeRaw { Self.appendMillis(whole: micros / 1000, thousandths: micros % 1000, to: &$0) }
        line.writeRaw(#","request_id":"#)
        line.writeString(requestID)
        line.writeRaw(#","remote":"#)
        line.writeString(remote)
        if let errorType {
            line.writeRaw(#","error":"#)
            line.writeString(errorType)
        }
        line.writeRaw("}")
        accessLog(String(decoding: line.bytes, as: UTF8.self))
    }

    /// `whole.fff` as bytes (no `String`: this runs twice per request).
    static func appendMillis(whole: UInt64, thousandths: UInt64, to out: inout [UInt8]) {
        out.appendDecimal(whole)
        out.append(UInt8(ascii: "."))
        let f = thousandths % 1000
        out.append(UInt8(truncatingIfNeeded: f / 100) &+ 0x30)
        out.append(UInt8(truncatingIfNeeded: f / 10 % 10) &+ 0x30)
        out.append(UInt8(truncatingIfNeeded: f % 10) &+ 0x30)
    }
}
