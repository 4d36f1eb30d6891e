import Dispatch
import Foundation
import Glibc
public import AppStoreServerAPI
import Crypto
import HTTPClient
public import HTTPCore
import Synchronization

/// `bouncer serve`: configuration from the environment, the HTTP server, signals, graceful drain. The executable
/// adds the wiring (`command`, `serveAPI`: `Sources/Bouncer/ServeCommand.swift`); the serving loop is here.
public enum ServeCommand {
    /// The text `bouncer serve --help` prints: the behaviour, then every variable.
    public static let usage = """
        usage: bouncer serve

        Runs the HTTP API. Prints `listening on http://HOST:PORT` (https:// with BOUNCER_TLS_*) once
        ready; SIGTERM or SIGINT drains in-flight requests and exits 0; with HTTPS, SIGHUP reloads the
        certificate and key. GET /metrics serves Prometheus text. Rate limits
        (BOUNCER_RATE_LIMIT_*) are token buckets kept per process: N instances behind a load
        balancer allow up to N times the configured rate. Configuration comes from the environment:

        """ + ServeSettings.helpText

    /// The App Store Server API client: HTTPS with the system roots plus `caFile`, keep-alive, the call budget.
    /// Throws when the CA file does not load (a startup error, not a failed lookup later).
    public static func makeAppStoreClient(_ settings: AppleAPISettings) throws -> AppStoreServerClient {
        let http = try HTTPClient(configuration: HTTPClient.Configuration(
            tls: TLSClientConfiguration(trustsSystemRoots: true, additionalCAFile: settings.caFile),
            connectTimeout: .seconds(3), readTimeout: settings.callBudget, responseTimeout: settings.callBudget,
            maxIdleConnectionsPerHost: 8, retry: .never, userAgent: "bouncer"))
        return AppStoreServerClient(http: http, configuration: AppStoreServerClient.Configuration(
            productionURL: settings.productionURL, sandboxURL: settings.sandboxURL, callBudget: settings.callBudget))
    }

    /// Adds the operational routes to `router`, serves until SIGTERM/SIGINT, drains, returns the exit status.
    /// The lead wires API routes into `router` and a database check into `readiness` before calling this.
    /// `metrics` feeds `GET /metrics` and the rate limiter's counts (`Operations/`).
    public static func run(
        settings: ServeSettings, router: Router, readiness: @escaping @Sendable () -> Bool,
        metrics: ServiceMetrics = ServiceMetrics(poolStatistics: nil)
    ) -> Int32 {
        let lifecycle = ServeLifecycle()
        var router = router
        addOperationalRoutes(to: &router, lifecycle: lifecycle, readiness: readiness)
        #if BOUNCER_BENCH_ROUTES
        addBenchmarkRoutes(to: &router)
        #endif
        MetricsRoute.add(to: &router, metrics: metrics, token: settings.operations.metricsToken)
        let limits = RateLimitAdmission(settings: settings.operations, metrics: metrics)

        // Block the signals' default action before any thread starts, then observe them on a queue.
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        if settings.server.tls != nil { signal(SIGHUP, SIG_IGN) }  // SIGHUP reloads the certificate (TLSReloader)
        let stop = DispatchSemaphore(value: 0)
        let signalQueue = DispatchQueue(label: "bouncer.signals")
        let sources = [SIGTERM, SIGINT].map { number -> any DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: signalQueue)
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }

        let logWriter = AccessLogWriter()
        defer { logWriter.close() }
        metrics.attach(accessLogDropped: { logWriter.droppedLines })
        let writeLine: @Sendable (String) -> Void = { logWriter.write($0) }
        let log: (@Sendable (String) -> Void)? = settings.accessLog ? writeLine : nil
        var admission: (@Sendable (Request) -> HTTPError?)? = nil
        if let limits { admission = { limits.admit($0) } }
        let server = HTTPServer(configuration: settings.server, router: router, accessLog: log,
                                admission: admission, observer: { metrics.observe($0) })
        metrics.attach(openConnections: { server.connectionCount })
        let port: Int
        do {
            port = try server.start()
        } catch {
            CLI.err("bouncer serve: \(error)\n")
            return 1
        }
        let host = settings.server.host.contains(":") ? "[\(settings.server.host)]" : settings.server.host
        let https = startHTTPS(settings: settings, server: server, httpsPort: port, log: log, logWriter: writeLine)
        if settings.httpRedirectPort != nil && https.redirect == nil {
            server.shutdown(gracePeriod: .zero)
            return 1
        }
        CLI.out("listening on \(settings.server.tls == nil ? "http" : "https")://\(host):\(port)\n")

        stop.wait()
        lifecycle.draining.store(true, ordering: .releasing)
        logWriter.write(#"{"event":"shutdown","phase":"draining"}"#)
        https.reloader?.stop()
        https.redirect?.shutdown(gracePeriod: .zero)
        server.shutdown(gracePeriod: settings.shutdownGrace)
        logWriter.write(#"{"event":"shutdown","phase":"done"}"#)
        sources.forEach { $0.cancel() }
        return 0
    }

    /// With HTTPS: the certificate reloader (SIGHUP and the periodic file check) and the optional redirect port.
    /// A redirect port that cannot bind is reported here and leaves `redirect` nil.
    static func startHTTPS(
        settings: ServeSettings, server: HTTPServer, httpsPort: Int, log: (@Sendable (String) -> Void)?,
        logWriter: @escaping @Sendable (String) -> Void
    ) -> (reloader: TLSReloader?, redirect: HTTPServer?) {
        guard let tls = settings.server.tls else { return (nil, nil) }
        let reloader = TLSReloader(server: server, certificateFile: tls.certificateChainFile,
                                   keyFile: tls.privateKeyFile, log: logWriter)
        reloader.start(checkEvery: settings.tlsReloadCheck)
        guard let redirectPort = settings.httpRedirectPort else { return (reloader, nil) }
        var configuration = settings.server
        configuration.tls = nil
        configuration.port = redirectPort
        configuration.eventLoopCount = 1
        configuration.workerCount = 1
        let redirect = HTTPServer(configuration: configuration, router: HTTPSRedirect.router(), accessLog: log,
                                  unmatched: HTTPSRedirect.handler(
                                      httpsPort: httpsPort, publicHost: settings.publicHost,
                                      certificateName: { server.tlsCertificateName(matching: $0) }))
        do {
            let bound = try redirect.start()
            logWriter(#"{"event":"http_redirect","port":\#(bound),"https_port":\#(httpsPort)}"#)
            return (reloader, redirect)
        } catch {
            CLI.err("bouncer serve: BOUNCER_HTTP_REDIRECT_PORT: \(error)\n")
            reloader.stop()
            return (nil, nil)
        }
    }

    /// `GET /healthz` (alive) and `GET /readyz` (ready unless draining or `readiness` says no). Both answer
    /// inline on the I/O thread: they never block, and a health check must not queue behind slow handlers.
    /// Neither declares a rate limit. The 503s carry the server's `retryAfterSeconds` (added when rendered).
    static func addOperationalRoutes(
        to router: inout Router, lifecycle: ServeLifecycle, readiness: @escaping @Sendable () -> Bool
    ) {
        let ok = Array(#"{"status":"ok"}"#.utf8)
        let ready = Array(#"{"status":"ready"}"#.utf8)
        router.add(.get, "/healthz", placement: .eventLoop) { _ in .json(200, ok) }
        router.add(.get, "/readyz", placement: .eventLoop) { _ in
            if lifecycle.draining.load(ordering: .acquiring) {
                throw HTTPError.serviceUnavailable(message: "Draining.", suggestion: "Use another instance.")
            }
            guard readiness() else {
                throw HTTPError.serviceUnavailable(message: "Not ready.", suggestion: "Retry shortly.")
            }
            return .json(200, ready)
        }
    }

    #if BOUNCER_BENCH_ROUTES
    /// `GET /v1/ping` (inline) and `GET /v1/ping/pooled` (through the worker pool): a trivial JSON route for
    /// bench/http, compiled only into bench builds (`-Xswiftc -DBOUNCER_BENCH_ROUTES`), never into production.
    static func addBenchmarkRoutes(to router: inout Router) {
        let pong = Array(#"{"pong":true}"#.utf8)
        router.add(.get, "/v1/ping", placement: .eventLoop) { _ in .json(200, pong) }
        router.add(.get, "/v1/ping/pooled") { _ in .json(200, pong) }
    }
    #endif
}


/// Process-wide serve state that handlers read (the readiness route needs to see the drain).
final class ServeLifecycle: Sendable {
    let draining = Atomic<Bool>(false)
}
