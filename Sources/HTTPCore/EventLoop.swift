import CSystem
import Crypto
import Dispatch
import Glibc
import Synchronization

/// A response produced by a worker, on its way back to the connection's loop.
struct Completion: Sendable {
    var fd: Int32
    var token: UInt64
    var bytes: [UInt8]
    var close: Bool
}

/// One I/O thread: an edge-triggered epoll loop that accepts, reads, parses, dispatches to the
/// worker pool and writes responses in order. An eventfd wakes it for completions and shutdown.
final class EventLoop: @unchecked Sendable {
    // @unchecked: all `var`s are confined to the loop thread; other threads only touch
    // `completions` (Locked), `wakePending` (Atomic) and `wake()` (eventfd write).
    private let core: ServerCore
    private let listenFD: Int32
    private let epfd: Int32
    private let wakeFD: Int32
    private let events: UnsafeMutableRawPointer
    private let maxEvents: Int32 = 256
    private let scratch: UnsafeMutableRawBufferPointer
    private var connections: [Int32: Connection] = [:]
    private let completions = Locked<[Completion]>([])
    private var dateCache = DateCache()
    private let wakePending = Atomic<Bool>(false)
    private var nextToken: UInt64 = 1
    private var listening = true
    private var acceptPaused = false
    private var drainStarted = false
    /// This loop's largest connection input buffer so far; new peaks are reported to `core`.
    private var largestInput = 0
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

    private static let listenToken: UInt64 = 1 << 40
    private static let wakeToken: UInt64 = 1 << 41
    private static let continueBytes = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

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
            .map(\.nanoseconds).min() ?? 1_000_000_000
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
            let conn = Connection(fd: fd, remoteAddress: remote, limits: limits)
            conn.fromTrustedProxy = fromProxy
            if tlsEnabled { conn.tlsPhase = .sniffing }
            conn.countedClient = counted
            let interest = bouncer_EPOLLIN | bouncer_EPOLLOUT | bouncer_EPOLLRDHUP | bouncer_EPOLLET
            guard bouncer_epoll_add(epfd, fd, interest, UInt64(UInt32(bitPattern: fd))) == 0 else {
                Glibc.close(fd)
                core.connectionCount.wrappingSubtract(1, ordering: .relaxed)
                if let counted { core.clientConnections.release(counted) }
                continue
            }
            connections[fd] = conn
            // The head deadline runs from accept: a connection that never sends is a slowloris too.
            arm(conn, .head, core.configuration.headerTimeout)
        }
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

    // MARK: per-connection state machine

    /// Parse what is buffered, write what is ready, read more while allowed; repeat.
    private func drive(_ conn: Connection) {
        if conn.tlsPhase == .sniffing || conn.tlsPhase == .handshaking {
            guard advanceHandshake(conn) else { return }
        }
        reading: while !conn.closed {
            if conn.phase == .reading { processBuffered(conn) }
            flush(conn)
            guard !conn.closed, !conn.waitingWritable, conn.readable,
                  conn.phase == .reading || conn.phase == .lingering else { break }
            if let tls = conn.tls, conn.tlsPhase == .established, conn.phase == .reading {
                switch tls.read(into: scratch) {
                case .done(let n):
                    // No short-read shortcut: a record is at most 16 KiB and OpenSSL reads one at a time, so only
                    // wantRead proves the socket drained.
                    conn.inbuf.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<min(n, scratch.count)]))
                    if conn.inbuf.count > largestInput {
                        largestInput = conn.inbuf.count
                        core.notePeakInput(largestInput)
                    }
                    continue reading
                case .wantRead:
                    conn.readable = false
                    break reading
                case .wantWrite:
                    conn.waitingWritable = true  // e.g. a TLS 1.3 KeyUpdate answer; EPOLLOUT resumes the read
                    break reading
                case .closed, .failed:
                    close(conn)
                    return
                }
            }
            let n = Glibc.read(conn.fd, scratch.baseAddress, scratch.count)
            if n > 0 {
                // Lingering input is discarded until EAGAIN or EOF: the peer's FIN is often queued behind its last
                // bytes (a TLS close_notify), and stopping at a short read would miss it until the linger deadline.
                if conn.phase == .lingering { continue }
                // A short read means the socket is drained; ET reports the next arrival.
                if n < scratch.count { conn.readable = false }
                conn.inbuf.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<n]))
                if conn.inbuf.count > largestInput {
                    largestInput = conn.inbuf.count
                    core.notePeakInput(largestInput)
                }
                continue
            }
            if n == 0 {
                close(conn)  // peer closed; a half-sent request gets no answer
                return
            }
            let e = bouncer_errno()
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK {
                conn.readable = false
                break
            }
            close(conn)
            return
        }
        if !conn.closed { rearm(conn) }
    }

    /// Moves a TLS connection through its first bytes and handshake; true once requests can be read (or a
    /// plain-HTTP request got its clear-text 400 queued). Never blocks: WANT_READ/WANT_WRITE wait for epoll.
    private func advanceHandshake(_ conn: Connection) -> Bool {
        if conn.tlsPhase == .sniffing {
            guard conn.readable else { return false }
            // Peek, not read: the bytes stay in the socket for OpenSSL's own reads.
            let n = recv(conn.fd, scratch.baseAddress, 8, Int32(MSG_PEEK))
            if n == 0 {
                close(conn)
                return false
            }
            if n < 0 {
                let e = bouncer_errno()
                if e == EINTR { return advanceHandshake(conn) }
                if e == EAGAIN || e == EWOULDBLOCK {
                    conn.readable = false
                } else {
                    close(conn)
                }
                return false
            }
            switch FirstBytes.classify(UnsafeRawBufferPointer(rebasing: scratch[0..<min(n, 8)])) {
            case .needMore:
                conn.readable = false  // fewer than 8 bytes peeked: the socket holds nothing more yet
                return false
            case .other:
                close(conn)
                return false
            case .plainHTTP:
                // Answered in clear text (the client speaks it); flush then half-closes and discards the request.
                conn.tlsPhase = .off
                let id = core.nextRequestID()
                let r = core.render(Self.tlsRequired, requestID: id)
                writeInline(conn, r, headRequest: false, requestID: id, keepAlive: false, versionMinor: 1)
                core.log(method: "-", template: "-", status: r.status, bytes: r.body.count, startedAt: monotonicNanos(),
                         requestID: id, remote: conn.clientAddress)
                conn.phase = .closing
                return true
            case .tlsHandshake:
                guard let context = core.tls?.current,
                      let session = try? TLSServerSession(context: context, socket: conn.fd) else {
                    close(conn)
                    return false
                }
                conn.tls = session
                conn.tlsPhase = .handshaking
            }
        }
        switch conn.tls?.handshake() {
        case .done:
            conn.tlsPhase = .established
            return true
        case .wantRead:
            conn.readable = false
            return false
        case .wantWrite:
            conn.waitingWritable = true
            return false
        case .closed, .failed, nil:
            close(conn)
            return false
        }
    }

    /// Parses and dispatches buffered requests until one goes to a worker, input runs out,
    /// or enough output is queued (pipelining backpressure).
    private func processBuffered(_ conn: Connection) {
        while conn.phase == .reading, conn.outbuf.count - conn.outIndex < 256 * 1024, conn.hasBufferedInput {
            let start = conn.readIndex
            let outcome = conn.inbuf.withUnsafeBufferPointer { p in
                conn.parser.parse(UnsafeBufferPointer(rebasing: p[start...]))
            }
            if conn.parser.continueRequested {
                conn.parser.continueRequested = false
                conn.outbuf.append(contentsOf: Self.continueBytes)
            }
            switch outcome {
            case .needMore:
                conn.compactInput()
                return
            case .failure(let error):
                let id = core.nextRequestID()
                let response = core.render(Self.framing(error), requestID: id)
                writeInline(conn, response, headRequest: false, requestID: id, keepAlive: false, versionMinor: 1)
                core.log(method: "-", template: "-", status: error.status, bytes: response.body.count,
                         startedAt: monotonicNanos(), requestID: id, remote: conn.clientAddress)
                conn.phase = .closing
                return
            case .request(let parsed, let consumed):
                conn.readIndex += consumed
                conn.requestsServed += 1
                conn.deadlineKind = .none  // the next request gets a fresh head deadline
                dispatch(conn, parsed)
            }
        }
        conn.compactInput()
    }

    private func dispatch(_ conn: Connection, _ parsed: ParsedRequest) {
        let startedAt = monotonicNanos()
        let requestID = core.requestID(for: parsed.requestIDHeader)
        let keepAlive = parsed.keepAlive && conn.requestsServed < core.configuration.maxRequestsPerConnection
            && !core.isDraining
        let isHead = parsed.method == .head
        let minor = parsed.versionMinor
        if conn.fromTrustedProxy {
            conn.clientAddress = ClientAddress.resolve(
                peer: conn.remoteAddress, forwardedFor: parsed.headers.values(for: "X-Forwarded-For"),
                trustedProxies: core.configuration.trustedProxies)
            if conn.requestsServed == 1, core.clientConnections.isEnabled {
                let client = ClientKey(address: conn.clientAddress)
                guard core.clientConnections.acquire(client) else {
                    // The forwarded client already holds its share: the same answer as at accept.
                    let r = core.render(Self.tooManyConnections, requestID: requestID)
                    writeInline(conn, r, headRequest: false, requestID: requestID, keepAlive: false, versionMinor: minor)
                    conn.phase = .closing
                    core.log(method: parsed.method.rawValue, template: "-", status: 503, bytes: r.body.count,
                             startedAt: startedAt, requestID: requestID, remote: conn.clientAddress)
                    return
                }
                conn.countedClient = client
            }
        }
        switch core.router.match(parsed.method, parsed.path) {
        case .notFound:
            if answerUnmatched(conn, parsed, requestID, keepAlive, startedAt) { return }
            let r = core.render(Self.notFound(parsed.method, parsed.path), requestID: requestID)
            finishInline(conn, r, parsed, "<unmatched>", requestID, keepAlive, startedAt)
        case .methodNotAllowed(let allow):
            if answerUnmatched(conn, parsed, requestID, keepAlive, startedAt) { return }
            let r = core.render(Self.methodNotAllowed(parsed.method, allow: allow), requestID: requestID)
            finishInline(conn, r, parsed, "<unmatched>", requestID, keepAlive, startedAt)
        case .badPath(let message):
            if answerUnmatched(conn, parsed, requestID, keepAlive, startedAt) { return }
            let r = core.render(Self.badPath(message), requestID: requestID)
            finishInline(conn, r, parsed, "<unmatched>", requestID, keepAlive, startedAt)
        case .found(let route, let parameters):
            let request = Request(
                method: parsed.method, path: parsed.path, query: parsed.query, headers: parsed.headers,
                body: parsed.body, pathParameters: parameters, routeTemplate: route.template,
                rateLimitScopes: route.rateLimits, requestID: requestID, remoteAddress: conn.remoteAddress,
                clientAddress: conn.clientAddress, versionMinor: minor)
            if let admission = core.admission, let rejected = admission(request) {
                finishInline(conn, core.render(rejected, requestID: requestID), parsed, route.template, requestID, keepAlive, startedAt)
                return
            }
            if route.placement == .eventLoop {
                let (response, errorType) = core.invoke(route.handler, request)
                finishInline(conn, response, parsed, route.template, requestID, keepAlive, startedAt, errorType)
                return
            }
            let token = nextToken
            nextToken &+= 1
            let fd = conn.fd
            let core = self.core
            let remote = conn.clientAddress
            let handler = route.handler
            let template = route.template
            let accepted = core.pool.trySubmit { [self] context in
                let (response, errorType) = core.invoke(handler, request)
                let close = !keepAlive || core.isDraining
                var out: [UInt8] = []
                out.reserveCapacity(192 + response.body.count)
                ResponseEncoder.encode(response, headRequest: isHead, requestID: requestID,
                                       connection: Self.connectionHeader(close: close, minor: minor),
                                       date: context.date.current(), into: &out)
                self.complete(Completion(fd: fd, token: token, bytes: out, close: close))
                core.log(method: request.method.rawValue, template: template, status: response.status,
                         bytes: response.body.count, startedAt: startedAt, requestID: requestID,
                         remote: remote, errorType: errorType)
            }
            if accepted {
                conn.token = token
                conn.phase = .processing
                conn.inflight = (parsed.method.rawValue, template, requestID, startedAt)
                arm(conn, .handler, core.configuration.handlerTimeout)
            } else {
                let r = core.render(Self.busy, requestID: requestID)
                finishInline(conn, r, parsed, template, requestID, keepAlive, startedAt)
            }
        }
    }

    /// Lets the server's `unmatched` handler answer a request no route matched; false when there is none.
    private func answerUnmatched(
        _ conn: Connection, _ parsed: ParsedRequest, _ requestID: String, _ keepAlive: Bool, _ startedAt: UInt64
    ) -> Bool {
        guard let unmatched = core.unmatched else { return false }
        let request = Request(
            method: parsed.method, path: parsed.path, query: parsed.query, headers: parsed.headers, body: parsed.body,
            routeTemplate: "<unmatched>", requestID: requestID, remoteAddress: conn.remoteAddress,
            clientAddress: conn.clientAddress, versionMinor: parsed.versionMinor)
        let (response, errorType) = core.invoke(unmatched, request)
        finishInline(conn, response, parsed, "<unmatched>", requestID, keepAlive, startedAt, errorType)
        return true
    }

    private func finishInline(
        _ conn: Connection, _ response: Response, _ parsed: ParsedRequest, _ template: String,
        _ requestID: String, _ keepAlive: Bool, _ startedAt: UInt64, _ errorType: String? = nil
    ) {
        writeInline(conn, response, headRequest: parsed.method == .head, requestID: requestID,
                    keepAlive: keepAlive, versionMinor: parsed.versionMinor)
        if !keepAlive { conn.phase = .closing }
        core.log(method: parsed.method.rawValue, template: template, status: response.status,
                 bytes: response.body.count, startedAt: startedAt, requestID: requestID,
                 remote: conn.clientAddress, errorType: errorType)
    }

    private func writeInline(
        _ conn: Connection, _ response: Response, headRequest: Bool, requestID: String, keepAlive: Bool, versionMinor: Int
    ) {
        ResponseEncoder.encode(response, headRequest: headRequest, requestID: requestID,
                               connection: Self.connectionHeader(close: !keepAlive, minor: versionMinor),
                               date: dateCache.current(), into: &conn.outbuf)
    }

    static func connectionHeader(close: Bool, minor: Int) -> ResponseEncoder.ConnectionHeader {
        if close { return .close }
        return minor == 0 ? .keepAlive10 : .default
    }

    private func handleCompletions() {
        let items = completions.withLock { pending -> [Completion] in
            let taken = pending
            pending.removeAll(keepingCapacity: true)
            return taken
        }
        for item in items {
            guard let conn = connections[item.fd], !conn.closed, conn.token == item.token,
                  conn.phase == .processing else { continue }  // stale: timed out or closed meanwhile
            conn.outbuf.append(contentsOf: item.bytes)
            conn.phase = item.close ? .closing : .reading
            conn.inflight = nil
            conn.deadlineKind = .none
            drive(conn)
        }
    }

    /// Sends queued output; on completion of a `.closing` connection, closes or lingers.
    private func flush(_ conn: Connection) {
        while conn.outIndex < conn.outbuf.count {
            let start = conn.outIndex
            if let tls = conn.tls, conn.tlsPhase == .established {
                switch conn.outbuf.withUnsafeBytes({ tls.write(UnsafeRawBufferPointer(rebasing: $0[start...])) }) {
                case .done(let n) where n > 0:
                    conn.outIndex += n
                    continue
                case .wantWrite, .wantRead:
                    if !conn.waitingWritable {
                        conn.waitingWritable = true
                        arm(conn, .write, core.configuration.writeTimeout)
                    }
                    return
                case .done, .closed, .failed:
                    close(conn)
                    return
                }
            }
            let n = conn.outbuf.withUnsafeBytes { p -> Int in
                guard let base = p.baseAddress else { return 0 }
                return bouncer_send(conn.fd, base + start, p.count - start)
            }
            if n > 0 {
                conn.outIndex += n
                continue
            }
            let e = bouncer_errno()
            if n < 0 && e == EINTR { continue }
            if n < 0 && (e == EAGAIN || e == EWOULDBLOCK) {
                if !conn.waitingWritable {
                    conn.waitingWritable = true
                    arm(conn, .write, core.configuration.writeTimeout)
                }
                return
            }
            close(conn)
            return
        }
        if conn.outbuf.capacity > 64 * 1024 { conn.outbuf = [] } else { conn.outbuf.removeAll(keepingCapacity: true) }
        conn.outIndex = 0
        conn.waitingWritable = false
        if conn.deadlineKind == .write {
            // The write deadline replaced whatever applied before; restore the handler's if one is running.
            conn.deadlineKind = .none
            if conn.phase == .processing { arm(conn, .handler, core.configuration.handlerTimeout) }
        }
        if conn.phase == .closing {
            // `readable` alone proves nothing (a TLS connection reads until WANT_READ only after its request was
            // answered): ask the kernel, so a client that sent nothing more is closed now and its slot freed.
            if conn.hasBufferedInput || (conn.readable && Self.hasUnreadInput(conn.fd)) {
                // Closing with unread input makes the kernel send RST, which can destroy the
                // response before the client reads it; half-close and discard input briefly instead.
                conn.tls?.shutdown()  // close_notify first: the TLS client knows the response is complete
                _ = Glibc.shutdown(conn.fd, Int32(SHUT_WR))
                conn.phase = .lingering
                conn.inbuf = []
                conn.readIndex = 0
                arm(conn, .linger, .seconds(2))
            } else {
                close(conn)
            }
        }
    }

    /// Whether the socket holds received bytes not yet read (a peek: they stay for the linger to discard).
    static func hasUnreadInput(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK)) > 0
    }

    private func close(_ conn: Connection) {
        guard !conn.closed else { return }
        conn.closed = true
        if let tls = conn.tls {
            tls.shutdown()  // close_notify, once, best effort; nothing after a failure
            conn.tls = nil  // frees the SSL before its descriptor goes
        }
        Glibc.close(conn.fd)  // also removes it from the epoll set
        connections[conn.fd] = nil
        core.connectionCount.wrappingSubtract(1, ordering: .relaxed)
        if let client = conn.countedClient { core.clientConnections.release(client) }
    }

    // MARK: deadlines

    private func arm(_ conn: Connection, _ kind: Connection.DeadlineKind, _ after: Duration) {
        conn.deadlineKind = kind
        conn.deadline = monotonicNanos() &+ after.nanoseconds
    }

    /// Picks the deadline that applies to the connection's current state.
    private func rearm(_ conn: Connection) {
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
