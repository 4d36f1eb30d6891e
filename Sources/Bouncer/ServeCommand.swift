import Dispatch
import Foundation
import Glibc
import API
import AppReceipt
import Console
import AppStoreJWS
import AppStoreServerAPI
import Crypto
import Domain
import HTTPClient
import HTTPCore
import Jobs
import Storage
import Verification
import Synchronization

/// `bouncer serve`: configuration from the environment, the HTTP server, signals, graceful drain.
enum ServeCommand {
    static let usage = """
        usage: bouncer serve

        Runs the HTTP API. Prints `listening on http://HOST:PORT` (https:// with BOUNCER_TLS_*) once
        ready; SIGTERM or SIGINT drains in-flight requests and exits 0; with HTTPS, SIGHUP reloads the
        certificate and key. GET /metrics serves Prometheus text. Rate limits
        (BOUNCER_RATE_LIMIT_*) are token buckets kept per process: N instances behind a load
        balancer allow up to N times the configured rate. Configuration comes from the environment:

        """ + ServeSettings.helpText

    static let command = Command(name: "serve", summary: "Run the HTTP API server", usage: usage) { args in
        if let status = CLI.handleHelpOrReject(args, usage: usage) { return status }
        switch ServeSettings.fromEnvironment(ProcessInfo.processInfo.environment) {
        case .failure(let problems):
            CLI.err("bouncer serve: invalid configuration:\n" + problems.messages.map { "  " + $0 + "\n" }.joined())
            return 2
        case .success(let settings):
            return serveAPI(settings: settings)
        }
    }

    /// Opens the database (embedded or `DATABASE_URL`), applies migrations, builds the verifier, the API and every
    /// service (no thread starts while anything can still fail), starts the services in order through one
    /// `ServiceGroup`, serves until a signal, drains, stops the services in reverse order and closes the database.
    static func serveAPI(settings: ServeSettings) -> Int32 {
        let log: @Sendable (String) -> Void = { CLI.err($0 + "\n") }
        let roots: TrustedRoots
        do {
            roots = settings.rootCertificatePaths.isEmpty
                ? TrustedRoots.apple : try TrustedRoots(contentsOf: settings.rootCertificatePaths)
        } catch {
            CLI.err("bouncer serve: BOUNCER_ROOT_CERTIFICATES: \(error)\n")
            return 2
        }
        // StoreKit 1 receipts chain to Apple Inc. Root; BOUNCER_ROOT_CERTIFICATES replaces it too (test PKIs).
        var receiptVerifier = ReceiptVerifier.apple
        if !settings.rootCertificatePaths.isEmpty {
            let ders = settings.rootCertificatePaths.compactMap(VerifyReceiptCommand.certificateDER(atPath:))
            guard ders.count == settings.rootCertificatePaths.count, let custom = ReceiptVerifier(rootDERs: ders) else {
                CLI.err("bouncer serve: BOUNCER_ROOT_CERTIFICATES: not usable for receipts\n")
                return 2
            }
            receiptVerifier = custom
        }
        let database: Database
        do {
            database = try Database.open(settings.database, log: log)
        } catch {
            CLI.err("bouncer serve: database: \(error)\n")
            return 1
        }
        let monitor = ReadinessMonitor(pool: database.pool)
        let verifier = SignedDataVerifier(roots: roots, chainCacheCapacity: settings.chainCacheSize)
        let metrics = ServiceMetrics(poolStatistics: { database.pool.statistics })
        let deriver = WebhookDeriver(database: database, log: log)
        let caches = Caches(database: database, settings: settings.cache,
                            xcodeTransactionLimit: settings.maxXcodeTransactionsPerProject,
                            receiptBatchMax: settings.database.receiptBatchMax, log: log,
                            committed: { deriver.wake() })
        metrics.attach(caches: { caches.statistics })
        let sealer = AESGCMCredentialSealer(settings: settings)
        log(CredentialCommands.encryptionLogLine(sealer))
        let appStore: AppStoreServerClient
        do {
            appStore = try makeAppStoreClient(settings.appleAPI)
        } catch {
            CLI.err("bouncer serve: BOUNCER_APPLE_API_CA_FILE: \(error)\n")
            database.close(log: log)
            return 2
        }
        defer { appStore.shutdown() }
        let signedData = AppStoreVerifier(verifier: verifier, metrics: metrics, receipts: receiptVerifier)
        let credentialStore = PostgresCredentialStore(pool: database.pool)
        let reconciliation = ReconcileWiring.reconciliation(
            settings: settings, database: database, projects: caches.projects, appStore: appStore,
            verifier: signedData,
            credentials: CredentialAdministration(
                projects: caches.projects, store: credentialStore, sealer: sealer,
                inspector: P256KeyInspector(), now: { Date() }),
            caches: caches)
        let entitlementTokens = SigningKeyCommands.entitlementTokens(
            settings: settings, database: database, purchases: caches.purchases, sealer: sealer)
        log(SigningKeyCommands.startupLogLine(entitlementTokens, sealer: sealer))
        // Native TLS means every console request arrives over HTTPS: the cookie is Secure whatever the variable says.
        var console = settings.console
        if settings.tlsCertificateFile != nil { console.secureCookie = true }
        let dependencies = APIDependencies(
            projects: caches.projects,
            purchases: caches.purchases,
            verifier: signedData,
            hasher: SHA256SecretHasher(),
            adminToken: settings.adminToken,
            notifications: caches.notifications,
            credentials: credentialStore,
            sealer: sealer,
            keyInspector: P256KeyInspector(),
            offerSigner: PromotionalOfferSigner(),
            appStore: appStore,
            lookupBudget: LookupBudget(settings: settings.operations.lookupBudget),
            appTransactions: caches.appTransactions,
            appStoreActions: PostgresAppStoreActionStore(pool: database.pool),
            customers: caches.customers,
            reconciliation: reconciliation,
            entitlementTokens: entitlementTokens,
            webhooks: WebhookAdministration(
                projects: caches.projects, store: PostgresWebhookStore(pool: database.pool), sealer: sealer,
                resolver: SystemWebhookHostResolver(), allowPrivateNetworks: settings.webhooks.allowPrivateNetworks,
                now: { Date() }),
            maxReceiptBodyBytes: settings.maxReceiptBodyBytes,
            maxReceiptRecords: settings.maxReceiptRecords,
            consoleSessions: PostgresConsoleSessionStore(pool: database.pool),
            console: console,
            overview: PostgresOverviewMetricsStore(pool: database.pool),
            log: log)
        // Every service, in start order (stopped in reverse): the caches before the jobs whose writes they announce.
        var services: [any Service] = [monitor, caches, deriver]
        if settings.reconcile.interval > 0 {
            services.append(ReconcileScheduler(reconciliation: reconciliation, interval: settings.reconcile.interval, log: log))
        }
        if settings.webhooks.enabled {
            do {
                services.append(try WebhookDispatcher(database: database, sealer: sealer, settings: settings.webhooks, log: log))
            } catch {
                CLI.err("bouncer serve: BOUNCER_WEBHOOK_CA_FILE: \(error)\n")
                database.close(log: log)
                return 2
            }
        }
        services.append(makeConsumptionResponder(settings: settings, database: database, caches: caches,
                                                 sealer: sealer, appStore: appStore, log: log))
        var router = Router()
        Routes.register(on: &router, dependencies)
        ConsoleRoutes.register(on: &router)
        let group = ServiceGroup(services, log: log)
        group.start()
        let status = run(settings: settings, router: router, readiness: { monitor.isReady }, metrics: metrics)
        group.stop(grace: settings.shutdownGrace)
        database.close(log: log)
        return status
    }

    /// The CONSUMPTION_REQUEST responder over the durable queue; its lease always outlasts one Apple call.
    static func makeConsumptionResponder(
        settings: ServeSettings, database: Database, caches: Caches, sealer: AESGCMCredentialSealer?,
        appStore: AppStoreServerClient, log: @escaping @Sendable (String) -> Void
    ) -> ConsumptionResponderService {
        let credentials = CredentialAdministration(
            projects: caches.projects, store: PostgresCredentialStore(pool: database.pool), sealer: sealer,
            inspector: P256KeyInspector(), now: { Date() })
        let responder = ConsumptionResponder(
            projects: caches.projects, credentials: credentials, appStore: appStore,
            retryBase: Double(settings.consumption.retryBase / .milliseconds(1)) / 1000)
        var consumption = settings.consumption
        let budget = Int(settings.appleAPI.callBudget.components.seconds) + 1
        consumption.leaseSeconds = max(consumption.leaseSeconds, budget + 1)
        return ConsumptionResponderService(queue: PostgresConsumptionQueue(pool: database.pool), responder: responder,
                                           settings: consumption, log: log)
    }

    /// The App Store Server API client: HTTPS with the system roots plus `caFile`, keep-alive, the call budget.
    /// Throws when the CA file does not load (a startup error, not a failed lookup later).
    static func makeAppStoreClient(_ settings: AppleAPISettings) throws -> AppStoreServerClient {
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
    static func run(
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
