import Primitives
import CSystem
import Foundation
import Glibc
import Synchronization

/// A failure to start the server (bind, epoll); `description` names the step and errno text.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    /// What failed, e.g. `bind 127.0.0.1:8080: Address already in use`.
    public let description: String

    init(_ description: String) { self.description = description }

    static func errno(_ step: String) -> HTTPServerError {
        HTTPServerError("\(step): \(String(cString: strerror(bouncer_errno())))")
    }
}

/// The HTTP/1.1 server: epoll I/O threads parse and write; a bounded worker pool runs handlers.
///
/// Lifecycle: `init` → `start()` (binds, spawns threads, returns the port) → `shutdown(gracePeriod:)`
/// (stop accepting, finish in-flight requests, close idle connections). Thread-safe.
public final class HTTPServer: Sendable {
    private enum Lifecycle {
        case idle
        case running(listenFD: Int32, loops: [EventLoop])
        case stopped
    }

    let core: ServerCore
    private let lifecycle = Mutex<Lifecycle>(.idle)

    /// Prepares a server; nothing is bound until `start()`.
    /// - Parameters:
    ///   - accessLog: receives one JSON line per request; nil disables access logging.
    ///   - admission: runs on the I/O thread after routing (so `routeTemplate`, `pathParameters` and
    ///     `rateLimitScopes` are set)
    ///     and before the handler runs or is queued; a non-nil error is sent instead (e.g. 429). It must
    ///     be cheap and never block: it delays every other connection of its loop.
    ///   - observer: called once per response, on whichever thread finished it, with the values of the
    ///     access-log line (e.g. for metrics). Same rules: cheap, never blocking. A handler that outlives
    ///     `handlerTimeout` is reported twice, like in the access log: the 503 sent, then its discarded result.
    ///   - unmatched: answers, on the I/O thread, every request no route matches instead of 404/405 (e.g. a
    ///     plain-HTTP port that redirects everything to HTTPS). Same rules: cheap, never blocking.
    public init(
        configuration: Configuration, router: Router, accessLog: (@Sendable (String) -> Void)?,
        admission: (@Sendable (Request) -> HTTPError?)? = nil, observer: (@Sendable (RequestRecord) -> Void)? = nil,
        unmatched: Handler? = nil
    ) {
        core = ServerCore(configuration: configuration, router: router, accessLog: accessLog,
                          admission: admission, observer: observer, unmatched: unmatched)
    }

    /// The configuration the server runs with.
    public var configuration: Configuration { core.configuration }

    /// True once `shutdown` has begun: readiness checks should report not-ready.
    public var isDraining: Bool { core.isDraining }

    /// Open client connections right now (for metrics and tests).
    public var connectionCount: Int { core.connectionCount.load(ordering: .relaxed) }

    /// The most request bytes one connection has made the server buffer at once since start (diagnostics,
    /// tests): bounded by the head limits plus `maxBodyBytes + maxChunkedFramingBytes` plus one 64 KiB read, where
    /// `maxBodyBytes` is the largest a route raised it to (`Router.add(maxBodyBytes:)`).
    public var peakConnectionInputBytes: Int { core.peakConnectionInputBytes.load(ordering: .relaxed) }

    /// Connections held by each I/O loop right now, in loop order (tests: they spread evenly).
    var connectionsPerLoop: [Int] {
        lifecycle.withLock { state -> [Int] in
            guard case .running(_, let loops) = state else { return [] }
            return loops.map { $0.openConnections.load(ordering: .relaxed) }
        }
    }

    /// Binds, starts the I/O and worker threads and returns the bound port (useful with port 0).
    /// SIGPIPE is set to ignored process-wide: a vanished peer must never kill the process.
    public func start() throws -> Int {
        try lifecycle.withLock { state -> Int in
            guard case .idle = state else { throw HTTPServerError("server already started") }
            bouncer_ignore_sigpipe()
            let c = core.configuration
            if let tls = core.tls {
                do {
                    try tls.load()
                } catch {
                    throw HTTPServerError("TLS: \(error)")
                }
            }
            guard (0...65535).contains(c.port) else { throw HTTPServerError("port \(c.port) out of range") }
            var gaiError: Int32 = 0
            let fd = c.host.withCString { bouncer_listen($0, Int32(c.port), Int32(c.listenBacklog), &gaiError) }
            if fd == -2 {
                throw HTTPServerError("resolve \(c.host): \(String(cString: gai_strerror(gaiError)))")
            }
            guard fd >= 0 else { throw HTTPServerError.errno("bind \(c.host):\(c.port)") }
            let port = Int(bouncer_local_port(fd))
            var loops: [EventLoop] = []
            do {
                for _ in 0..<max(1, c.eventLoopCount) { loops.append(try EventLoop(core: core, listenFD: fd)) }
            } catch {
                Glibc.close(fd)
                throw error
            }
            for loop in loops { loop.peers = loops }
            core.pool.start()
            for (index, loop) in loops.enumerated() {
                let thread = Thread { loop.run() }
                thread.name = "bouncer-io-\(index)"
                thread.start()
            }
            state = .running(listenFD: fd, loops: loops)
            return port
        }
    }

    /// Stops accepting, lets in-flight requests finish (their responses carry `Connection: close`),
    /// closes idle keep-alive connections, and returns when all are done or `gracePeriod` elapsed
    /// (then the rest are closed). Safe to call more than once.
    public func shutdown(gracePeriod: Duration) {
        let taken = lifecycle.withLock { state -> (Int32, [EventLoop])? in
            guard case .running(let fd, let loops) = state else { return nil }
            state = .stopped
            return (fd, loops)
        }
        guard let (listenFD, loops) = taken else { return }
        let deadline = monotonicNanos() &+ gracePeriod.nonNegativeNanoseconds
        core.drainDeadline.store(deadline, ordering: .releasing)
        core.draining.store(true, ordering: .releasing)
        // shutdown(2) on a listener stops it at once (pending connections are reset), so no new
        // client waits in the backlog while we drain; the fd itself is closed after the loops stop.
        _ = Glibc.shutdown(listenFD, Int32(SHUT_RDWR))
        for loop in loops { loop.wake() }
        for loop in loops {
            // Loops enforce the deadline themselves; the extra second only guards against a stuck loop.
            let now = monotonicNanos()
            let wait = (deadline > now ? deadline - now : 0) &+ 1_000_000_000
            _ = loop.stopped.wait(timeout: .now() + .nanoseconds(Int(min(wait, UInt64(Int.max / 2)))))
        }
        Glibc.close(listenFD)
        core.pool.shutdown(deadline: max(deadline, monotonicNanos() &+ 100_000_000))
    }
}
