import CSystem
import Crypto
import Dispatch
import Glibc
import Primitives
import Synchronization

// The per-connection state machine of `EventLoop`: TLS handshake, parse, dispatch to the worker pool, write in order,
// close. The loop itself (epoll, accept, wake-ups, drain) and the deadlines are in EventLoop.swift.

extension EventLoop {
    // MARK: per-connection state machine

    /// Parse what is buffered, write what is ready, read more while allowed; repeat.
    func drive(_ conn: Connection) {
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
            // An answer from memory needs no worker: two thread hand-offs fewer, and no wait for a busy pool.
            if let inline = route.inline, let response = inline(request) {
                finishInline(conn, response, parsed, route.template, requestID, keepAlive, startedAt)
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
                if let stream = response.stream {
                    let (bytes, failure) = self.stream(stream, response, fd: fd, token: token, close: close,
                                                       isHead: isHead, minor: minor, requestID: requestID,
                                                       date: context.date.current())
                    core.log(method: request.method.rawValue, template: template, status: response.status,
                             bytes: bytes, startedAt: startedAt, requestID: requestID, remote: remote,
                             errorType: errorType ?? failure)
                    return
                }
                var out: [UInt8] = []
                out.reserveCapacity(192 + response.body.count)
                ResponseEncoder.encode(response, headRequest: isHead, requestID: requestID,
                                       connection: Self.connectionHeader(close: close, minor: minor),
                                       date: context.date.current(), into: &out)
                // Counted before it is handed to the loop: a client that has the response sees it in /metrics.
                core.log(method: request.method.rawValue, template: template, status: response.status,
                         bytes: response.body.count, startedAt: startedAt, requestID: requestID,
                         remote: remote, errorType: errorType)
                self.complete(Completion(fd: fd, token: token, bytes: out, close: close))
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

    /// Sends a streamed response from the worker that ran its handler: the head, then the producer's chunks, each
    /// waited for (`BodyWriter`). Returns the body bytes produced and, when the producer threw, its error's type.
    private func stream(
        _ stream: BodyStream, _ response: Response, fd: Int32, token: UInt64, close: Bool, isHead: Bool, minor: Int,
        requestID: String, date: [UInt8]
    ) -> (Int, String?) {
        let chunked = minor >= 1
        let bodyAllowed = response.status >= 200 && response.status != 204 && response.status != 304
        // HTTP/1.0 has no chunks: the body ends with the connection.
        let closeAfter = close || (!chunked && bodyAllowed && !isHead)
        var head: [UInt8] = []
        ResponseEncoder.encode(response, headRequest: isHead, requestID: requestID,
                               connection: Self.connectionHeader(close: closeAfter, minor: minor),
                               date: date, chunked: chunked, into: &head)
        guard bodyAllowed && !isHead else {
            complete(Completion(fd: fd, token: token, bytes: head, close: closeAfter))
            return (0, nil)
        }
        let writer = BodyWriter(.connection(send: { [self] bytes, waiting, last in
            complete(Completion(fd: fd, token: token, bytes: bytes, close: last, stream: waiting))
        }, chunked: chunked, wait: core.configuration.writeTimeout + .seconds(5)))
        do {
            try writer.sendAndWait(head)
            try stream.produce(writer)
            try writer.finish(close: closeAfter)
            return (writer.bytesWritten, nil)
        } catch {
            writer.abort()
            return (writer.bytesWritten, String(describing: type(of: error)))
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
        // Counted before it is written, as on the pool: a client that has the response sees it in /metrics.
        core.log(method: parsed.method.rawValue, template: template, status: response.status,
                 bytes: response.body.count, startedAt: startedAt, requestID: requestID,
                 remote: conn.clientAddress, errorType: errorType)
        writeInline(conn, response, headRequest: parsed.method == .head, requestID: requestID,
                    keepAlive: keepAlive, versionMinor: parsed.versionMinor)
        if !keepAlive { conn.phase = .closing }
    }

    func writeInline(
        _ conn: Connection, _ response: Response, headRequest: Bool, requestID: String, keepAlive: Bool, versionMinor: Int
    ) {
        // A route on the event loop must not block it on a client: a streamed body is produced here in full.
        let response = (try? response.collected()) ?? core.render(.internalError, requestID: requestID)
        ResponseEncoder.encode(response, headRequest: headRequest, requestID: requestID,
                               connection: Self.connectionHeader(close: !keepAlive, minor: versionMinor),
                               date: dateCache.current(), into: &conn.outbuf)
    }

    static func connectionHeader(close: Bool, minor: Int) -> ResponseEncoder.ConnectionHeader {
        if close { return .close }
        return minor == 0 ? .keepAlive10 : .default
    }

    func handleCompletions() {
        let items = completions.withLock { pending -> [Completion] in
            let taken = pending
            pending.removeAll(keepingCapacity: true)
            return taken
        }
        for item in items {
            guard let conn = connections[item.fd], !conn.closed, conn.token == item.token,
                  conn.phase == .processing else {
                item.stream?.cancel()
                continue  // stale: timed out or closed meanwhile
            }
            conn.outbuf.append(contentsOf: item.bytes)
            if let writer = item.stream {
                // A streamed body goes on: no handler deadline (the write deadline guards a client that stops reading).
                conn.streamWaiting = writer
                conn.deadlineKind = .none
                drive(conn)
                continue
            }
            conn.phase = item.close ? .closing : .reading
            conn.inflight = nil
            conn.deadlineKind = .none
            drive(conn)
        }
    }

    /// Sends queued output; on completion of a `.closing` connection, closes or lingers.
    func flush(_ conn: Connection) {
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
        let streaming = conn.streamWaiting != nil
        if let writer = conn.streamWaiting {
            conn.streamWaiting = nil
            writer.resume()
        }
        if conn.deadlineKind == .write {
            // The write deadline replaced whatever applied before; restore the handler's if one is running.
            conn.deadlineKind = .none
            if conn.phase == .processing && !streaming { arm(conn, .handler, core.configuration.handlerTimeout) }
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

    func close(_ conn: Connection) {
        guard !conn.closed else { return }
        conn.closed = true
        conn.streamWaiting?.cancel()
        conn.streamWaiting = nil
        if let tls = conn.tls {
            tls.shutdown()  // close_notify, once, best effort; nothing after a failure
            conn.tls = nil  // frees the SSL before its descriptor goes
        }
        Glibc.close(conn.fd)  // also removes it from the epoll set
        connections[conn.fd] = nil
        openConnections.wrappingSubtract(1, ordering: .relaxed)
        core.connectionCount.wrappingSubtract(1, ordering: .relaxed)
        if let client = conn.countedClient { core.clientConnections.release(client) }
    }
}
