import CSystem
import Crypto
import Dispatch
import Glibc
import Primitives
import Synchronization

/// A response produced by a worker, on its way back to the connection's loop.
struct Completion: Sendable {
    var fd: Int32
    var token: UInt64
    var bytes: [UInt8]
    var close: Bool
    /// A chunk of a streamed body: the response goes on, and this writer waits until the chunk left the socket.
    var stream: BodyWriter? = nil
}

/// An accepted connection on its way to the loop that will serve it.
struct Adoption: Sendable {
    var fd: Int32
    var remote: String
    var fromProxy: Bool
    var counted: ClientKey?
}

/// One I/O thread: an edge-triggered epoll loop that accepts, reads, parses, dispatches to the
/// worker pool and writes responses in order. An eventfd wakes it for completions and shutdown.
final class EventLoop: @unchecked Sendable {
    // @unchecked: all `var`s are confined to the loop thread (`peers` is set before it starts); other threads only
    // touch `completions` and `adoptions` (Locked), `wakePending` and `openConnections` (Atomic) and `wake()`
    // (eventfd write).
    let core: ServerCore
    private let listenFD: Int32
    private let epfd: Int32
    private let wakeFD: Int32
    private let events: UnsafeMutableRawPointer
    private let maxEvents: Int32 = 256
    let scratch: UnsafeMutableRawBufferPointer
    var connections: [Int32: Connection] = [:]
    let completions = Locked<[Completion]>([])
    var dateCache = DateCache()
    private let wakePending = Atomic<Bool>(false)
    var nextToken: UInt64 = 1
    private var listening = true
    private var acceptPaused = false
    private var drainStarted = false
    /// This loop's largest connection input buffer so far; new peaks are reported to `core`.
    var largestInput = 0
    private let sweepInterval: UInt64
    private let limits: ParserLimits
    /// Whether the listener speaks TLS (then every connection starts in `TLSPhase.sniffing`).
    private let tlsEnabled: Bool
    /// Connections accepted per wake-up. A TLS connection costs a handshake (~0.4 ms of CPU) on the loop that
    /// accepted it: taking one at a time lets the level-triggered listener wake the other loops for the next ones
    /// (nginx's default, `multi_accept off`) instead of one loop queueing 64 handshakes; plain connections are
    /// cheap, so a batch saves wake-ups. (bench/http could not tell 1 from 64 apart on the noisy 2-core box.)
    private let acceptBatch: Int
    /// Signalled when `run()` returns.
    let stopped = DispatchSemaphore(value: 0)
    /// The server's loops, this one included (set before the threads start, emptied when this loop stops): an
    /// accepted connection goes to the loop with the fewest, so connections spread evenly whichever loop the
    /// listener woke. (With `EPOLLEXCLUSIVE` the kernel wakes the first idle loop in its wait queue, which took
    /// 80 % of wrk's 32 connections in a measured run: one I/O thread busy, the other idle.)
    var peers: [EventLoop] = []
    /// Connections this loop holds or has been handed and not yet registered (read by the other loops).
    let openConnections = Atomic<Int>(0)
    /// Connections accepted by another loop for this one; refused once this loop has stopped.
    private let adoptions = Locked<(open: Bool, items: [Adoption])>((true, []))

    private static let listenToken: UInt64 = 1 << 40
    private static let wakeToken: UInt64 = 1 << 41
    static let continueBytes = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    init(core: ServerCore, listenFD: Int32) throws {
        self.core = core
        self.listenFD = listenFD
        var limits = core.configuration.parserLimits
        if core.router.hasBodyLimitOverrides {
            let router = core.router
            limits.routeBodyLimit = { method, path in router.maxBodyBytes(method, path) }
        }
        self.limits = limits
        self.tlsEnabled = core.tls != nil
        self.acceptBatch = core.tls != nil ? 1 : 64
        epfd = bouncer_epoll_create()
        wakeFD = bouncer_eventfd()
        guard let events = bouncer_epoll_events_alloc(maxEvents) else {
            throw HTTPServerError("out of memory for epoll events")
        }
        self.events = events
        scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        let c = core.configuration
        let shortest = [c.headerTimeout, c.bodyTimeout, c.idleTimeout, c.handlerTimeout, c.writeTimeout]
            .map(\.nonNegativeNanoseconds).min() ?? 1_000_000_000
        sweepInterval = min(250_000_000, max(5_000_000, shortest / 4))
        guard epfd >= 0, wakeFD >= 0 else { throw HTTPServerError.errno("epoll/eventfd") }
        // EPOLLEXCLUSIVE: with several loops, one accept wake-up per connection, not a thundering herd.
        guard bouncer_epoll_add(epfd, listenFD, bouncer_EPOLLIN | bouncer_EPOLLEXCLUSIVE, Self.listenToken) == 0,
              bouncer_epoll_add(epfd, wakeFD, bouncer_EPOLLIN, Self.wakeToken) == 0 else {
            throw HTTPServerError.errno("epoll_ctl")
        }
    }

    deinit {
        // Workers keep the loop alive through their jobs, so the eventfd outlives every `wake()`.
        for conn in connections.values where !conn.closed { Glibc.close(conn.fd) }
        Glibc.close(epfd)
        Glibc.close(wakeFD)
        free(events)
        scratch.deallocate()
    }

    /// Called from any thread: queue a worker's response and wake the loop (coalesced).
    func complete(_ completion: Completion) {
        completions.withLock { $0.append(completion) }
        if !wakePending.exchange(true, ordering: .acquiringAndReleasing) { wake() }
    }

    /// Interrupts `epoll_wait` (completions, shutdown).
    func wake() { _ = bouncer_eventfd_signal(wakeFD) }

    // MARK: loop

    func run() {
        var nextSweep = monotonicNanos() &+ sweepInterval
        while true {
            let now0 = monotonicNanos()
            let timeoutMs = nextSweep > now0 ? Int32(min(1000, (nextSweep - now0) / 1_000_000 + 1)) : 0
            let n = bouncer_epoll_wait(epfd, events, maxEvents, timeoutMs)
            if n < 0 && bouncer_errno() != EINTR { break }
            for i in 0..<max(0, Int(n)) {
                let token = bouncer_epoll_event_token(events, Int32(i))
                let flags = bouncer_epoll_event_flags(events, Int32(i))
                if token == Self.listenToken {
                    acceptConnections()
                } else if token == Self.wakeToken {
                    bouncer_eventfd_drain(wakeFD)
                    wakePending.store(false, ordering: .releasing)
                    handleAdoptions()
                    handleCompletions()
                } else if let conn = connections[Int32(truncatingIfNeeded: token)] {
                    if flags & (bouncer_EPOLLIN | bouncer_EPOLLHUP | bouncer_EPOLLRDHUP | bouncer_EPOLLERR) != 0 {
                        conn.readable = true
                    }
                    if flags & bouncer_EPOLLOUT != 0 { conn.waitingWritable = false }
                    drive(conn)
                }
            }
            let now = monotonicNanos()
            if core.isDraining {
                startDrainIfNeeded()
                if connections.isEmpty { break }
                if now >= core.drainDeadline.load(ordering: .acquiring) {
                    for conn in Array(connections.values) { close(conn) }
                    break
                }
            }
            if now >= nextSweep {
                sweep(now)
                nextSweep = now &+ sweepInterval
            }
        }
        stopped.signal()
    }

    private func startDrainIfNeeded() {
        guard !drainStarted else { return }
        drainStarted = true
        if listening {
            _ = bouncer_epoll_del(epfd, listenFD)
            listening = false
        }
        // Idle keep-alive connections go now; the rest finish their request with `Connection: close`.
        for conn in Array(connections.values)
        where conn.phase == .reading && !conn.parser.isMidRequest && !conn.hasBufferedInput && !conn.hasUnsentOutput {
            close(conn)
        }
    }

    // MARK: accept

    private func acceptConnections() {
        guard listening else { return }
        let maxConnections = core.configuration.maxConnections
        var peer = [CChar](repeating: 0, count: 64)
        for _ in 0..<acceptBatch {
            let fd = peer.withUnsafeMutableBufferPointer { bouncer_accept(listenFD, $0.baseAddress, 64) }
            if fd < 0 {
                let e = bouncer_errno()
                if e == EINTR || e == ECONNABORTED || e == EPROTO { continue }
                if e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM {
                    // Level-triggered listen fd would spin; pause accepting until the next sweep.
                    _ = bouncer_epoll_del(epfd, listenFD)
                    listening = false
                    acceptPaused = true
                } else if e != EAGAIN && e != EWOULDBLOCK {
                    _ = bouncer_epoll_del(epfd, listenFD)  // EINVAL after shutdown(2) of the listener
                    listening = false
                }
                return
            }
            let count = core.connectionCount.wrappingAdd(1, ordering: .relaxed).newValue
            let remote = ClientAddress.normalizedPeer(peer.withUnsafeBufferPointer { p in
                String(decoding: p.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            })
            // A trusted proxy carries many clients: its forwarded clients are capped at their first request.
            let fromProxy = core.isTrustedProxy(remote)
            let counted = core.clientConnections.isEnabled && !fromProxy ? ClientKey(address: remote) : nil
            if count > maxConnections || core.isDraining
                || (counted.map { !core.clientConnections.acquire($0) } ?? false) {
                // Best effort, before the connection's request is even read: it gets the same shape as any error.
                // A TLS client could not read clear text before its handshake: it only sees the close.
                if tlsEnabled {
                    Glibc.close(fd)
                    core.connectionCount.wrappingSubtract(1, ordering: .relaxed)
                    continue
                }
                let id = core.nextRequestID()
                var out: [UInt8] = []
                ResponseEncoder.encode(core.render(Self.tooManyConnections, requestID: id), headRequest: false,
                                       requestID: id, connection: .close, date: dateCache.current(), into: &out)
                out.withUnsafeBytes { p in
                    if let base = p.baseAddress { _ = bouncer_send(fd, base, p.count) }
                }
                Glibc.close(fd)
                core.connectionCount.wrappingSubtract(1, ordering: .relaxed)
                continue
            }
            let adoption = Adoption(fd: fd, remote: remote, fromProxy: fromProxy, counted: counted)
            if let target = leastLoadedPeer(), target.adopt(adoption) { continue }
            openConnections.wrappingAdd(1, ordering: .relaxed)
            register(adoption)
        }
    }

    /// The loop with the fewest connections when another one has fewer than this one, its count taken for the
    /// connection about to be handed over (so a batch of accepts spreads); nil: keep it here.
    private func leastLoadedPeer() -> EventLoop? {
        guard peers.count > 1 else { return nil }
        var best = self
        var fewest = openConnections.load(ordering: .relaxed)
        for peer in peers where peer !== self {
            let count = peer.openConnections.load(ordering: .relaxed)
            if count < fewest { best = peer; fewest = count }
        }
        guard best !== self else { return nil }
        best.openConnections.wrappingAdd(1, ordering: .relaxed)
        return best
    }

    /// Called by another loop: queue an accepted connection and wake this one. False once this loop has stopped
    /// (the caller keeps the connection; the count it took is given back).
    private func adopt(_ adoption: Adoption) -> Bool {
        let taken = adoptions.withLock { state -> Bool in
            guard state.open else { return false }
            state.items.append(adoption)
            return true
        }
        guard taken else {
            openConnections.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        if !wakePending.exchange(true, ordering: .acquiringAndReleasing) { wake() }
        return true
    }

    private func handleAdoptions() {
        let items = adoptions.withLock { state -> [Adoption] in
            let taken = state.items
            state.items.removeAll(keepingCapacity: true)
            return taken
        }
        for adoption in items { register(adoption) }
    }

    /// At stop: no more hand-overs; connections handed over but never registered are closed.
    private func closeAdoptions() {
        let items = adoptions.withLock { state -> [Adoption] in
            state.open = false
            return state.items
        }
        for adoption in items { discard(adoption) }
    }

    private func discard(_ adoption: Adoption) {
        Glibc.close(adoption.fd)
        openConnections.wrappingSubtract(1, ordering: .relaxed)
        core.connectionCount.wrappingSubtract(1, ordering: .relaxed)
        if let counted = adoption.counted { core.clientConnections.release(counted) }
    }

    /// Starts serving an accepted connection on this loop (`openConnections` already counts it).
    private func register(_ adoption: Adoption) {
        let fd = adoption.fd
        let conn = Connection(fd: fd, remoteAddress: adoption.remote, limits: limits)
        conn.fromTrustedProxy = adoption.fromProxy
        if tlsEnabled { conn.tlsPhase = .sniffing }
        conn.countedClient = adoption.counted
        let interest = bouncer_EPOLLIN | bouncer_EPOLLOUT | bouncer_EPOLLRDHUP | bouncer_EPOLLET
        guard bouncer_epoll_add(epfd, fd, interest, UInt64(UInt32(bitPattern: fd))) == 0 else {
            discard(adoption)
            return
        }
        connections[fd] = conn
        // The head deadline runs from accept: a connection that never sends is a slowloris too.
        arm(conn, .head, core.configuration.headerTimeout)
    }

    // MARK: the loop's own errors (rendered like every other error by `HTTPError`)

    static let tooManyConnections = HTTPError.serviceUnavailable(
        code: "OVERLOADED", message: "Too many connections", suggestion: "Retry after a short delay.")

    static let busy = HTTPError.serviceUnavailable(
        code: "OVERLOADED", message: "Server busy", suggestion: "Retry after the Retry-After delay.")

    static let handlerTimedOut = HTTPError.serviceUnavailable(
        code: "HANDLER_TIMEOUT", message: "The request took too long", suggestion: "Retry later.")

    static let tlsRequired = HTTPError(
        status: 400, code: "TLS_REQUIRED", message: "This port speaks HTTPS only; the request was sent as plain HTTP",
        suggestion: "Use an https:// URL for this host and port.")

    static let requestTimeout = HTTPError(
        status: 408, code: "REQUEST_TIMEOUT", message: "Request not received in time",
        suggestion: "Send the whole request promptly.")

    static func framing(_ error: HTTPParseError) -> HTTPError {
        HTTPError(status: error.status, code: error.code, message: error.message,
                  suggestion: "Fix the request framing; the connection is closed after this response.")
    }

    static func notFound(_ method: HTTPMethod, _ path: String) -> HTTPError {
        HTTPError(status: 404, code: "NOT_FOUND", message: "No route for \(method.rawValue) \(path)",
                  suggestion: "Check the path against the API documentation.")
    }

    static func methodNotAllowed(_ method: HTTPMethod, allow: [String]) -> HTTPError {
        HTTPError(status: 405, code: "METHOD_NOT_ALLOWED", message: "Method \(method.rawValue) is not allowed here",
                  suggestion: "Use one of: \(allow.joined(separator: ", ")).",
                  headers: ["Allow": allow.joined(separator: ", ")])
    }

    static func badPath(_ message: String) -> HTTPError {
        HTTPError(status: 400, code: "BAD_REQUEST", message: message,
                  suggestion: "Percent-encode path segments as UTF-8; \"/\" and NUL are not allowed inside one.")
    }

    // MARK: deadlines

    func arm(_ conn: Connection, _ kind: Connection.DeadlineKind, _ after: Duration) {
        conn.deadlineKind = kind
        conn.deadline = monotonicNanos() &+ after.nonNegativeNanoseconds
    }

    /// Picks the deadline that applies to the connection's current state.
    func rearm(_ conn: Connection) {
        guard conn.phase == .reading, !conn.waitingWritable else { return }
        let c = core.configuration
        if conn.parser.isReadingBody {
            if conn.deadlineKind != .body { arm(conn, .body, c.bodyTimeout) }
        } else if conn.parser.isMidRequest || conn.hasBufferedInput {
            if conn.deadlineKind != .head { arm(conn, .head, c.headerTimeout) }
        } else if conn.requestsServed == 0 && conn.deadlineKind == .head {
            // A fresh connection that has sent nothing keeps the head deadline armed at accept.
        } else if conn.deadlineKind != .idle {
            arm(conn, .idle, c.idleTimeout)
        }
    }

    private func sweep(_ now: UInt64) {
        if acceptPaused && !core.isDraining {
            if bouncer_epoll_add(epfd, listenFD, bouncer_EPOLLIN | bouncer_EPOLLEXCLUSIVE, Self.listenToken) == 0 {
                listening = true
                acceptPaused = false
            }
        }
        let expired = connections.values.filter { $0.deadline <= now && $0.deadlineKind != .none }
        for conn in expired where !conn.closed {
            if conn.tlsPhase == .sniffing || conn.tlsPhase == .handshaking {
                close(conn)  // a stalled or dripped handshake: no channel for a 408, the slot is freed
                continue
            }
            switch conn.deadlineKind {
            case .head, .body:
                // 408 then close (RFC 9110 §15.5.9); the slowloris client loses its slot.
                conn.outbuf.removeAll()
                conn.outIndex = 0
                let id = core.nextRequestID()
                let r = core.render(Self.requestTimeout, requestID: id)
                writeInline(conn, r, headRequest: false, requestID: id, keepAlive: false, versionMinor: 1)
                core.log(method: "-", template: "-", status: 408, bytes: r.body.count, startedAt: now,
                         requestID: id, remote: conn.clientAddress)
                conn.phase = .closing
                conn.readable = false
                conn.inbuf = []
                conn.readIndex = 0
                conn.deadlineKind = .none
                flush(conn)
                if !conn.closed && conn.phase != .lingering { arm(conn, .write, core.configuration.writeTimeout) }
            case .handler:
                // The worker cannot be pre-empted; the client gets 503 now and the late result is dropped.
                conn.token = 0
                let info = conn.inflight
                conn.inflight = nil
                let id = info?.requestID ?? core.nextRequestID()
                let r = core.render(Self.handlerTimedOut, requestID: id)
                writeInline(conn, r, headRequest: false, requestID: id, keepAlive: false, versionMinor: 1)
                core.log(method: info?.method ?? "-", template: info?.template ?? "-", status: 503,
                         bytes: r.body.count, startedAt: info?.startedAt ?? now, requestID: id, remote: conn.clientAddress)
                conn.phase = .closing
                conn.deadlineKind = .none
                flush(conn)
            case .idle, .write, .linger, .none:
                close(conn)
            }
        }
    }
}
