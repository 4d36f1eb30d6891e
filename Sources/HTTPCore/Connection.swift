import Crypto

/// One client connection; owned and touched only by its event loop's thread.
final class Connection {
    enum Phase { case reading, processing, closing, lingering }
    enum DeadlineKind { case none, head, body, idle, handler, write, linger }
    /// Where a connection on a TLS listener is: `off` on a plain listener (or after a plain-HTTP request got its
    /// clear-text refusal), `sniffing` until its first bytes are seen, `handshaking`, then `established`.
    enum TLSPhase { case off, sniffing, handshaking, established }

    let fd: Int32
    let remoteAddress: String
    /// Whether the peer is a trusted proxy (its requests' clients come from `X-Forwarded-For`).
    var fromTrustedProxy = false
    /// The client this connection holds a per-client slot for; released on close.
    var countedClient: ClientKey?
    /// The client of the latest request (the peer until one arrives), for log lines without a request.
    var clientAddress: String
    var parser: RequestParser
    /// Received bytes; `readIndex` is the start of the request being parsed.
    var inbuf: [UInt8] = []
    var readIndex = 0
    /// Serialized responses not yet sent; `outIndex` bytes of it already went out.
    var outbuf: [UInt8] = []
    var outIndex = 0
    var phase: Phase = .reading
    /// Edge-triggered epoll: true until a read proves the socket is drained.
    var readable = true
    var waitingWritable = false
    var closed = false
    var deadline: UInt64 = .max
    var deadlineKind: DeadlineKind = .none
    /// Identifies the request handed to a worker; a completion with another token is stale.
    var token: UInt64 = 0
    var requestsServed = 0
    var tlsPhase: TLSPhase = .off
    /// The TLS session once a ClientHello arrived; all reads and writes go through it while `established`.
    var tls: TLSServerSession?
    /// What the in-flight request needs for a timeout response and its log line.
    var inflight: (method: String, template: String, requestID: String, startedAt: UInt64)? = nil
    /// A streamed body's writer waiting for its last chunk to leave the socket (`BodyStream`).
    var streamWaiting: BodyWriter?

    init(fd: Int32, remoteAddress: String, limits: ParserLimits) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.clientAddress = remoteAddress
        self.parser = RequestParser(limits: limits)
    }

    var hasUnsentOutput: Bool { outIndex < outbuf.count }
    var hasBufferedInput: Bool { readIndex < inbuf.count }

    /// Drops consumed request bytes so the buffer does not grow across keep-alive requests.
    func compactInput() {
        if readIndex == inbuf.count {
            if inbuf.capacity > 64 * 1024 { inbuf = [] } else { inbuf.removeAll(keepingCapacity: true) }
            readIndex = 0
        } else if readIndex > 0, !parser.isMidRequest || readIndex >= 4096 {
            // Safe mid-request too: the parser's offsets are relative to `readIndex`.
            inbuf.removeFirst(readIndex)
            readIndex = 0
        }
    }
}
