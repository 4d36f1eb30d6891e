public import Crypto
import Glibc

extension HTTPServer {
    /// Every limit, deadline and size of the server in one place; defaults are production values.
    public struct Configuration: Sendable {
        /// Interface to bind; default `127.0.0.1`.
        public var host: String = "127.0.0.1"
        /// TCP port; `0` picks a free one (`start()` returns it). Default 8080.
        public var port: Int = 8080
        /// I/O threads running epoll loops (they share the listener via EPOLLEXCLUSIVE); default one
        /// per available CPU (`cpuCount`: cgroup quota and affinity count, not the host's cores), at
        /// most 4. On the 2-core bench box two loops served ~30% more than one.
        public var eventLoopCount: Int = min(4, HTTPServer.Configuration.cpuCount)
        /// Worker threads that run `.workerPool` handlers; default max(4, 2 × available CPUs), since
        /// handlers block on the database.
        public var workerCount: Int = max(4, 2 * HTTPServer.Configuration.cpuCount)
        /// Requests waiting for a worker; beyond it the server answers 503 + `Retry-After`. Default 1024.
        public var queueDepth: Int = 1024
        /// Open client connections; beyond it new ones get a canned 503 and are closed. Default 10,000.
        public var maxConnections: Int = 10_000
        /// Open connections per client address; beyond it a new connection gets the same canned 503 as
        /// `maxConnections` and is closed, so one client cannot take every slot. The client is the socket
        /// peer, or for a peer in `trustedProxies` the forwarded client of the connection's first request
        /// (`Request.clientAddress`). 0 turns the cap off. Default 256.
        public var maxConnectionsPerClient: Int = 256
        /// Proxies and load balancers whose `X-Forwarded-For` is believed (CIDR blocks, IPv4 and IPv6);
        /// their own connections are not capped per client, their forwarded clients are. Default none:
        /// `X-Forwarded-For` is ignored and every client is its socket peer.
        public var trustedProxies: [IPNetwork] = []
        /// `listen(2)` backlog. Default 512.
        public var listenBacklog: Int = 512
        /// Request line bytes; longer → 414. Default 8 KiB.
        public var maxRequestLineBytes: Int = 8 * 1024
        /// Header section bytes; larger → 431. Default 16 KiB.
        public var maxHeaderBytes: Int = 16 * 1024
        /// Header fields; more → 431. Default 100.
        public var maxHeaderCount: Int = 100
        /// Decoded request body bytes; larger → 413. Default 64 KiB.
        public var maxBodyBytes: Int = 64 * 1024
        /// Bytes a chunked body may spend on framing (chunk-size lines, extensions, CRLFs, trailers) on top
        /// of its data: the raw bytes of a chunked body on the wire may not exceed `maxBodyBytes` plus this,
        /// else 413 and close. It caps what one connection makes the server buffer, whatever it sends
        /// (with the defaults, head ≤ 24 KiB + chunked body ≤ 128 KiB + one 64 KiB read). Default 64 KiB.
        public var maxChunkedFramingBytes: Int = 64 * 1024
        /// Time from a request's first byte (or accept) until its head is complete; a client that
        /// trickles bytes is still cut off (slowloris) with 408. Default 30 s.
        public var headerTimeout: Duration = .seconds(30)
        /// Time from the end of the head until the body is complete; then 408. Default 30 s.
        public var bodyTimeout: Duration = .seconds(30)
        /// How long a keep-alive connection may sit idle between requests. Default 65 s
        /// (longer than common load balancers' 60 s, so the balancer closes first).
        public var idleTimeout: Duration = .seconds(65)
        /// How long a handler may run before the client gets 503 and the connection closes
        /// (the handler thread itself cannot be pre-empted). Default 10 s.
        public var handlerTimeout: Duration = .seconds(10)
        /// How long a response may wait for a slow reader before the connection is dropped. Default 10 s.
        public var writeTimeout: Duration = .seconds(10)
        /// Requests served per connection before `Connection: close`. Default 10,000.
        public var maxRequestsPerConnection: Int = 10_000
        /// Seconds sent in `Retry-After` with every 503 (overload, handler timeout, readiness, the API's outages):
        /// the one source, applied when an `HTTPError` is rendered. Default 1.
        public var retryAfterSeconds: Int = 1

        /// HTTPS: the certificate chain and key files. When set, the listener speaks only TLS (1.2 and 1.3,
        /// ECDHE with AES-GCM or ChaCha20-Poly1305, ALPN `http/1.1`, session resumption); a plain-HTTP request
        /// gets 400 `TLS_REQUIRED` in clear text and is closed. The handshake runs under `headerTimeout` and every
        /// connection limit, like a request head. `HTTPServer.reloadTLS()` re-reads the files. Default nil (HTTP).
        public var tls: TLSServerConfiguration? = nil

        /// Defaults as documented on each property.
        public init() {}

        var parserLimits: ParserLimits {
            ParserLimits(maxRequestLineBytes: maxRequestLineBytes, maxHeaderBytes: maxHeaderBytes,
                         maxHeaderCount: maxHeaderCount, maxBodyBytes: maxBodyBytes, maxChunkLineBytes: 1024,
                         maxChunkedBodyWireBytes: Self.saturatingSum(maxBodyBytes, maxChunkedFramingBytes))
        }

        private static func saturatingSum(_ a: Int, _ b: Int) -> Int {
            let (sum, overflow) = max(0, a).addingReportingOverflow(max(0, b))
            return overflow ? Int.max : sum
        }

        /// CPUs this process may use, at least 1: the online CPUs narrowed by the affinity mask and the
        /// cgroup CPU quota rounded up (`AvailableCPUs`). Read once per process.
        public static var cpuCount: Int { availableCPUs }
        private static let availableCPUs = AvailableCPUs.current()
    }
}

/// Monotonic time in nanoseconds (CLOCK_MONOTONIC: immune to wall-clock jumps).
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}
