import Dispatch
import Foundation
import Glibc
import API
import Commands
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

/// `bouncer serve`'s wiring: the database, the verifier, the API and every service, built before any thread starts.
/// The serving loop (signals, drain, HTTPS) is `ServeCommand.run` in `Sources/Commands/Serving.swift`.
extension ServeCommand {
    static let command = Command(name: "serve", summary: "Run the HTTP API server", usage: usage) { args in
        if let status = CLI.handleHelpOrReject(args, usage: usage) { return status }
        guard let settings = ServeSettings.fromProcessEnvironment(command: "bouncer serve") else { return 2 }
        return serveAPI(settings: settings)
    }

    /// Opens the database (embedded or `DATABASE_URL`), applies migrations, builds the verifier, the API and every
    /// service (no thread starts while anything can still fail), starts the services in order through one
    /// `ServiceGroup`, serves until a signal, drains, stops the services in reverse order and closes the database.
    static func serveAPI(settings: ServeSettings) -> Int32 {
        let log: @Sendable (String) -> Void = { CLI.err($0 + "\n") }
        guard let roots = settings.trustedRoots(command: "bouncer serve") else { return 2 }
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
        guard let database = settings.openDatabase(command: "bouncer serve", log: log) else { return 1 }
        let monitor = ReadinessMonitor(pool: database.pool)
        let verifier = SignedDataVerifier(roots: roots, chainCacheCapacity: settings.chainCacheSize)
        let metrics = ServiceMetrics(poolStatistics: { database.pool.statistics })
        let deriver = WebhookDeriver(database: database, log: log)
        let caches = Caches(database: database, settings: settings.cache,
                            xcodeTransactionLimit: settings.maxXcodeTransactionsPerProject,
                            receiptBatchMax: settings.database.receiptBatchMax,
                            receiptBatches: settings.database.receiptBatches, log: log,
                            committed: { deriver.wake() })
        metrics.attach(caches: { caches.statistics })
        metrics.attach(deriveLag: { deriver.lag })
        deriver.attach(receiptBatches: { caches.receiptBatches })
        metrics.attach(receiptBatches: { caches.receiptBatches })
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
        let usage = UsageMeter(store: PostgresUsageStore(pool: database.pool))
        // Every call to Apple counts toward its project's account (in memory, like the receipts).
        let meteredAppStore = MeteredAppleServerAPI(appStore, meter: usage, now: { Date() })
        let signedData = AppStoreVerifier(verifier: verifier, metrics: metrics, receipts: receiptVerifier)
        let credentialStore = PostgresCredentialStore(pool: database.pool)
        let reconciliation = ReconcileWiring.reconciliation(
            settings: settings, database: database, projects: caches.projects, appStore: meteredAppStore,
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
        let auditLog = PostgresAuditLog(pool: database.pool)
        let auditGaps = AuditGaps()
        metrics.attach(auditGaps: { auditGaps.total })
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
            appStore: meteredAppStore,
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
            charts: PostgresChartStore(pool: database.pool),
            customerList: PostgresCustomerListStore(pool: database.pool),
            accounts: PostgresAccountStore(pool: database.pool),
            usage: usage,
            members: (PostgresMemberStore(pool: database.pool), OpenSSLMemberCryptography()),
            auditLog: auditLog,
            auditGaps: auditGaps,
            retention: PostgresRetentionStore(pool: database.pool),
            retentionMessaging: meteredAppStore,
            introductoryOffers: PostgresIntroductoryOfferStore(pool: database.pool),
            log: log)
        // Every service, in start order (stopped in reverse): the caches before the jobs whose writes they announce.
        var services: [any Service] = [monitor, caches, deriver,
                                   UsageFlusher(meter: usage, log: log)]
        if settings.reconcile.interval > 0 {
            services.append(ReconcileScheduler(reconciliation: reconciliation, interval: settings.reconcile.interval, log: log))
        }
        if settings.webhooks.enabled {
            do {
                services.append(try WebhookDispatcher(database: database, sealer: sealer, settings: settings.webhooks,
                                                       meter: usage, receiptLoad: { deriver.receiptLoad }, log: log))
            } catch {
                CLI.err("bouncer serve: BOUNCER_WEBHOOK_CA_FILE: \(error)\n")
                database.close(log: log)
                return 2
            }
        }
        services.append(AuditRetention(store: auditLog, days: settings.auditRetentionDays, log: log))
        services += makeAppleQueueWorkers(settings: settings, database: database, caches: caches, sealer: sealer,
                                          appStore: meteredAppStore, log: log)
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

    /// The workers over the durable queues that call Apple: the CONSUMPTION_REQUEST responder and the Finish
    /// Transaction worker (projects with `finish_transactions`). Both sign with the projects' stored credentials,
    /// back off from `BOUNCER_CONSUMPTION_RETRY_BASE_SECONDS`, and hold a lease that always outlasts one Apple call.
    static func makeAppleQueueWorkers(
        settings: ServeSettings, database: Database, caches: Caches, sealer: AESGCMCredentialSealer?,
        appStore: any AppleServerAPI, log: @escaping @Sendable (String) -> Void
    ) -> [any Service] {
        let credentials = credentialAdministration(database: database, caches: caches, sealer: sealer)
        let retryBase = Double(settings.consumption.retryBase / .milliseconds(1)) / 1000
        let budget = Int(settings.appleAPI.callBudget.components.seconds) + 1
        var consumption = settings.consumption
        consumption.leaseSeconds = max(consumption.leaseSeconds, budget + 1)
        let responder = ConsumptionResponder(projects: caches.projects, credentials: credentials, appStore: appStore,
                                             retryBase: retryBase)
        let finisher = TransactionFinisher(projects: caches.projects, credentials: credentials, appStore: appStore,
                                           retryBase: retryBase)
        return [
            ConsumptionResponderService(queue: PostgresConsumptionQueue(pool: database.pool), responder: responder,
                                        settings: consumption, log: log),
            TransactionFinisherService(queue: PostgresTransactionFinishQueue(pool: database.pool), finisher: finisher,
                                       leaseSeconds: consumption.leaseSeconds, log: log),
        ]
    }

    /// The project credentials a background worker signs Apple's JWTs with (opened with the server's key).
    static func credentialAdministration(database: Database, caches: Caches, sealer: AESGCMCredentialSealer?)
        -> CredentialAdministration
    {
        CredentialAdministration(
            projects: caches.projects, store: PostgresCredentialStore(pool: database.pool), sealer: sealer,
            inspector: P256KeyInspector(), now: { Date() })
    }
}
