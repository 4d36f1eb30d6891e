public import Jobs
import AppStoreServerAPI
import Crypto
import Foundation
public import API
import Domain
import HTTPCore

/// Everything `bouncer serve` reads from `BOUNCER_*` environment variables.
public struct ServeSettings: Sendable {
    /// Handler threads default to 16 per available CPU within 4...32 (not HTTPCore's generic max(4, 2 × CPUs)):
    /// handlers mostly wait on PostgreSQL commits, and the receipts waiting together are what a group commit
    /// batches — on 2 cores bench/api's 32 connections made batches of 4.4 receipts with 16 handlers and 7.2 with
    /// 32, and PostgreSQL's CPU per receipt fell by a fifth (bench/README, session 14; 64 batched no more). A
    /// handler waiting in a batch holds no connection, so 32 handlers share the pool of 16. "Available" follows the cgroup CPU quota and affinity (`AvailableCPUs`), so a
    /// container limited to 1 CPU gets 8, whatever the host's core count; event loops follow it too (at most 4).
    var server: HTTPServer.Configuration = {
        var configuration = HTTPServer.Configuration()
        configuration.workerCount = defaultWorkerCount(cpus: HTTPServer.Configuration.cpuCount)
        return configuration
    }()

    /// 16 handler threads per available CPU, at least 4, at most 32.
    static func defaultWorkerCount(cpus: Int) -> Int { min(32, max(4, 16 * cpus)) }
    /// How long SIGTERM/SIGINT waits for in-flight requests. `BOUNCER_SHUTDOWN_GRACE_SECONDS`, default 10.
    public var shutdownGrace: Duration = .seconds(10)
    /// `BOUNCER_MAX_RECEIPT_BODY_BYTES`: the body limit of `POST /v1/receipts` (StoreKit 1 receipts of long
    /// purchase histories exceed 100 KB); other routes keep `BOUNCER_MAX_BODY_BYTES`.
    public var maxReceiptBodyBytes = 1024 * 1024
    /// `BOUNCER_MAX_RECEIPT_RECORDS`: in-app records one StoreKit 1 receipt may carry (the longest real receipt we
    /// know has 187); more is refused with 413 before any database work.
    public var maxReceiptRecords = 2_000
    /// `BOUNCER_MAX_XCODE_TRANSACTIONS_PER_PROJECT`: Xcode/LocalTesting transaction rows a project may hold; a
    /// write past it is refused with 409 `XCODE_LIMIT_REACHED`.
    public var maxXcodeTransactionsPerProject = 10_000
    /// JSON access log on stderr. `BOUNCER_ACCESS_LOG` (on/off), default on.
    var accessLog = true
    /// Where the data lives: `DATABASE_URL`, or else an embedded cluster under `BOUNCER_DATA_DIR`.
    public var database: DatabaseSettings = {
        var database = DatabaseSettings()
        database.receiptBatches = defaultReceiptBatches(cpus: HTTPServer.Configuration.cpuCount)
        return database
    }()

    /// Group-commit batches written at once default to half the available CPUs, at least 1, at most 8: receipts
    /// that wait for the batch being written make the next batch larger, and a larger batch costs less per receipt.
    /// On 2 cores one batch at a time made batches of ~12 receipts instead of ~7 and cut PostgreSQL's CPU per
    /// receipt by a third (bench/README, session 15); with more cores, more batches keep more of PostgreSQL busy.
    static func defaultReceiptBatches(cpus: Int) -> Int { min(8, max(1, cpus / 2)) }
    /// `BOUNCER_ADMIN_TOKEN`: enables the admin API; unset = disabled.
    public var adminToken: String?
    /// `BOUNCER_ROOT_CERTIFICATES`: colon-separated DER/PEM files replacing the bundled Apple roots.
    public var rootCertificatePaths: [String] = []
    /// `BOUNCER_CHAIN_CACHE_SIZE`: verified certificate chains kept (0 disables the cache).
    public var chainCacheSize = 64
    /// `/metrics` token and rate limits (`Operations/OperationsSettings.swift`).
    public var operations = OperationsSettings()
    /// The project and read caches (`Sources/Jobs/Caches.swift`).
    public var cache = CacheSettings()
    /// Scheduled reconciliation with Apple (`Jobs/Reconciler.swift`).
    public var reconcile = ReconcileServeSettings()
    /// Webhook delivery (`Jobs/WebhookDispatcher.swift`).
    public var webhooks = WebhookSettings()
    /// `BOUNCER_AUDIT_RETENTION_DAYS`: how long the audit log keeps an entry (`Jobs/AuditRetention.swift`).
    public var auditRetentionDays = AuditLog.defaultRetentionDays
    /// `BOUNCER_ENCRYPTION_KEY`: seals App Store private keys (AES-256-GCM); unset = storing credentials is refused.
    var encryptionKey: [UInt8]?
    /// `BOUNCER_ENCRYPTION_KEY_PREVIOUS`: the key being rotated away from, accepted for opening only.
    var previousEncryptionKey: [UInt8]?
    /// `BOUNCER_TOKEN_ISSUER`: the `iss` of entitlement tokens (default `bouncer`).
    var tokenIssuer = "bouncer"

    /// `BOUNCER_APPLE_API_PRODUCTION_URL`, `BOUNCER_APPLE_API_SANDBOX_URL`, `BOUNCER_APPLE_API_CA_FILE`,
    /// `BOUNCER_APPLE_API_TIMEOUT_SECONDS`: where and how the App Store Server API is called.
    public var appleAPI = AppleAPISettings()

    /// `BOUNCER_CONSUMPTION_*`: the CONSUMPTION_REQUEST responder (`Jobs/ConsumptionResponderService.swift`).
    public var consumption = ConsumptionSettingsOfServe()

    /// `BOUNCER_TLS_CERT_FILE` / `BOUNCER_TLS_KEY_FILE`: HTTPS on the listener (both or neither); see `server.tls`.
    public var tlsCertificateFile: String?
    var tlsKeyFile: String?
    /// `BOUNCER_TLS_RELOAD_CHECK_SECONDS`: how often the certificate files are checked for changes (default 60).
    var tlsReloadCheck: Duration = .seconds(60)
    /// `BOUNCER_HTTP_REDIRECT_PORT`: a plain-HTTP port that redirects to HTTPS and serves /healthz (TLS only).
    var httpRedirectPort: Int?
    /// `BOUNCER_PUBLIC_HOST`: the host (and port) redirects name; unset = the certificate's names.
    var publicHost: PublicHost?
    /// `BOUNCER_CONSOLE_SECURE_COOKIE`, `BOUNCER_CONSOLE_SESSION_HOURS`: the admin console's session cookie.
    public var console = ConsoleSettings()

    /// Bytes in an encryption key (AES-256).
    static let encryptionKeyBytes = 32
    static let encryptionKeyAdvice = "generate one with `openssl rand -base64 32`"

    /// A key from its base64 text: exactly 32 bytes, not all one value (a placeholder such as 32 zero bytes).
    static func parseEncryptionKey(_ text: String) -> Result<[UInt8], ConfigurationProblems> {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let data = Data(base64Encoded: trimmed) else {
            return .failure(ConfigurationProblems(messages: [
                "must be \(encryptionKeyBytes) random bytes in base64 (this is not base64); \(encryptionKeyAdvice)"]))
        }
        let bytes = [UInt8](data)
        guard bytes.count == encryptionKeyBytes else {
            return .failure(ConfigurationProblems(messages: [
                "must be \(encryptionKeyBytes) random bytes in base64 (it decodes to \(bytes.count) bytes); "
                    + encryptionKeyAdvice]))
        }
        guard Set(bytes).count > 1 else {
            return .failure(ConfigurationProblems(messages: [
                "is a placeholder (every byte the same), not a random key; \(encryptionKeyAdvice)"]))
        }
        return .success(bytes)
    }

    /// One documented variable: name, meaning and how it lands in the settings.
    struct Variable: Sendable {
        let name: String
        let help: String
        let apply: @Sendable (inout ServeSettings, String) -> String?  // returns an error message or nil
    }

    static let variables: [Variable] = [
        Variable(name: "BOUNCER_HOST", help: "interface to bind (default 127.0.0.1)") { s, v in
            guard !v.isEmpty, !v.utf8.contains(0) else { return "must be a host name or IP address" }
            s.server.host = v
            return nil
        },
        int("BOUNCER_PORT", "TCP port, 0 = pick a free one (default 8080)", 0...65535) { $0.server.port = $1 },
        int("BOUNCER_EVENT_LOOPS", "I/O threads (default: available CPUs, at most 4)", 1...64) { $0.server.eventLoopCount = $1 },
        int("BOUNCER_WORKERS", "handler threads (default 16 per available CPU, 4 to 32)", 1...1024) { $0.server.workerCount = $1 },
        int("BOUNCER_QUEUE_DEPTH", "requests waiting for a worker before 503 (default 1024)", 1...1_000_000) {
            $0.server.queueDepth = $1
        },
        int("BOUNCER_MAX_CONNECTIONS", "open connections before 503 (default 10000)", 1...1_000_000) {
            $0.server.maxConnections = $1
        },
        int("BOUNCER_MAX_CONNECTIONS_PER_CLIENT", "open connections per client address before 503, 0 = off (default 256)",
            0...1_000_000) { $0.server.maxConnectionsPerClient = $1 },
        Variable(name: "BOUNCER_TRUSTED_PROXIES",
                 help: "comma-separated CIDR blocks whose X-Forwarded-For names the client (default unset)") { s, v in
            do {
                s.server.trustedProxies = try IPNetwork.parseList(v)
            } catch {
                return "\(error)"
            }
            return nil
        },
        int("BOUNCER_MAX_REQUEST_LINE_BYTES", "request line limit, else 414 (default 8192)", 64...1_048_576) {
            $0.server.maxRequestLineBytes = $1
        },
        int("BOUNCER_MAX_HEADER_BYTES", "header section limit, else 431 (default 16384)", 256...1_048_576) {
            $0.server.maxHeaderBytes = $1
        },
        int("BOUNCER_MAX_HEADER_COUNT", "header field limit, else 431 (default 100)", 1...10_000) {
            $0.server.maxHeaderCount = $1
        },
        int("BOUNCER_MAX_BODY_BYTES", "request body limit, else 413 (default 65536)", 0...67_108_864) {
            $0.server.maxBodyBytes = $1
        },
        int("BOUNCER_MAX_RECEIPT_BODY_BYTES",
            "POST /v1/receipts body limit (StoreKit 1 receipts), else 413 (default 1048576)", 0...67_108_864) {
            $0.maxReceiptBodyBytes = $1
        },
        int("BOUNCER_MAX_RECEIPT_RECORDS", "in-app records per StoreKit 1 receipt, else 413 (default 2000)", 1...1_000_000) {
            $0.maxReceiptRecords = $1
        },
        int("BOUNCER_MAX_XCODE_TRANSACTIONS_PER_PROJECT",
            "Xcode/LocalTesting transactions a project may hold, else 409 (default 10000)", 1...100_000_000) {
            $0.maxXcodeTransactionsPerProject = $1
        },
        seconds("BOUNCER_HEADER_TIMEOUT_SECONDS", "time to receive a request head, else 408 (default 30)") {
            $0.server.headerTimeout = $1
        },
        seconds("BOUNCER_BODY_TIMEOUT_SECONDS", "time to receive a request body, else 408 (default 30)") {
            $0.server.bodyTimeout = $1
        },
        seconds("BOUNCER_IDLE_TIMEOUT_SECONDS", "keep-alive idle time before closing (default 65)") {
            $0.server.idleTimeout = $1
        },
        seconds("BOUNCER_HANDLER_TIMEOUT_SECONDS", "handler time before 503 (default 10)") { $0.server.handlerTimeout = $1 },
        seconds("BOUNCER_WRITE_TIMEOUT_SECONDS", "time for a slow reader to take a response (default 10)") {
            $0.server.writeTimeout = $1
        },
        seconds("BOUNCER_SHUTDOWN_GRACE_SECONDS", "drain time on SIGTERM/SIGINT (default 10)") { $0.shutdownGrace = $1 },
        Variable(name: "DATABASE_URL", help: "postgres:// URL; unset = start an embedded PostgreSQL under BOUNCER_DATA_DIR") {
            s, v in
            guard !v.isEmpty else { return "must not be empty (unset it to use the embedded database)" }
            s.database.url = v
            return nil
        },
        Variable(name: "BOUNCER_DATA_DIR", help: "embedded PostgreSQL's home when DATABASE_URL is unset (default ./.bouncer)") {
            s, v in
            guard !v.isEmpty, !v.utf8.contains(0) else { return "must be a directory path" }
            s.database.dataDirectory = v
            return nil
        },
        int("BOUNCER_DB_POOL_SIZE", "PostgreSQL connections (default 16)", 1...1000) { $0.database.poolSize = $1 },
        seconds("BOUNCER_DB_ACQUIRE_TIMEOUT_SECONDS", "wait for a free connection before 503 (default 2)") {
            $0.database.acquireTimeout = $1
        },
        seconds("BOUNCER_DB_STATEMENT_TIMEOUT_SECONDS", "PostgreSQL statement_timeout (default 10)") {
            $0.database.statementTimeout = $1
        },
        int("BOUNCER_RECEIPT_BATCH_MAX", "most concurrent receipts sharing one commit (default 32; 1 = off)", 1...1000) {
            $0.database.receiptBatchMax = $1
        },
        int("BOUNCER_RECEIPT_BATCHES",
            "group-commit batches written at once, each on its own connection (default half the CPUs, 1-8)", 1...64) {
            $0.database.receiptBatches = $1
        },
        Variable(name: "BOUNCER_ADMIN_TOKEN",
                 help: "bearer token for /v1/admin (unset = admin API disabled; >= 32 chars: openssl rand -base64 32)") {
            s, v in
            if let problem = tokenProblem(v) { return problem }
            s.adminToken = v
            return nil
        },
        Variable(name: "BOUNCER_ROOT_CERTIFICATES", help: "colon-separated root certificate files (default: bundled Apple roots)") {
            s, v in
            let paths = v.split(separator: ":").map(String.init).filter { !$0.isEmpty }
            guard !paths.isEmpty else { return "must list at least one file" }
            s.rootCertificatePaths = paths
            return nil
        },
        Variable(name: "BOUNCER_CONSOLE_SECURE_COOKIE",
                 help: "mark the console's session cookie Secure: on when /admin/ is reached over HTTPS (default off; always on with BOUNCER_TLS_CERT_FILE)") {
            s, v in
            switch v.lowercased() {
            case "on", "true", "1": s.console.secureCookie = true
            case "off", "false", "0": s.console.secureCookie = false
            default: return "must be on or off"
            }
            return nil
        },
        int("BOUNCER_CONSOLE_SESSION_HOURS", "console session lifetime in hours (default 12)",
            1...(ConsoleSessionRules.maxLifetimeSeconds / 3600)) { $0.console.sessionLifetimeSeconds = $1 * 3600 },
        int("BOUNCER_CHAIN_CACHE_SIZE", "verified certificate chains cached (default 64, 0 = off)", 0...100_000) {
            $0.chainCacheSize = $1
        },
        int("BOUNCER_READ_CACHE_SIZE", "users whose subscriptions are cached in memory (default 20000, 0 = off)",
            0...10_000_000) { $0.cache.readCacheSize = $1 },
        seconds("BOUNCER_READ_CACHE_MAX_AGE_SECONDS",
                "oldest cached read served: the staleness bound when an announcement is lost; each entry expires "
                    + "at a random point of the last half (default 10)") {
            $0.cache.readMaxAge = $1
        },
        seconds("BOUNCER_CACHE_REFRESH_SECONDS", "full reload of the project cache, a safety net (default 60)") {
            $0.cache.refreshInterval = $1
        },
        Variable(name: "BOUNCER_TOKEN_ISSUER", help: "the iss claim of entitlement tokens, e.g. your public URL (default bouncer)") {
            s, v in
            guard (1...256).contains(v.unicodeScalars.count) else { return "must be 1 to 256 characters" }
            s.tokenIssuer = v
            return nil
        },
        Variable(name: "BOUNCER_ENCRYPTION_KEY",
                 help: "32 random bytes, base64: encrypts App Store private keys (unset = storing them is refused)") {
            s, v in
            switch parseEncryptionKey(v) {
            case .success(let key): s.encryptionKey = key
            case .failure(let problem): return problem.messages.joined()
            }
            return nil
        },
        Variable(name: "BOUNCER_ENCRYPTION_KEY_PREVIOUS",
                 help: "the replaced encryption key during a rotation: still decrypts (see `bouncer credentials`)") { s, v in
            switch parseEncryptionKey(v) {
            case .success(let key): s.previousEncryptionKey = key
            case .failure(let problem): return problem.messages.joined()
            }
            return nil
        },
        appleURL("BOUNCER_APPLE_API_PRODUCTION_URL",
                 "App Store Server API base URL, Production (default \(AppleAPISettings.defaultProductionURL))") {
            $0.appleAPI.productionURL = $1
        },
        appleURL("BOUNCER_APPLE_API_SANDBOX_URL",
                 "App Store Server API base URL, Sandbox (default \(AppleAPISettings.defaultSandboxURL))") {
            $0.appleAPI.sandboxURL = $1
        },
        Variable(name: "BOUNCER_APPLE_API_CA_FILE",
                 help: "PEM file of extra CA certificates trusted for the App Store Server API (default: system roots)") {
            s, v in
            // Checked here so a typo is a startup error, not a 503 on the first lookup; the TLS context loads it again.
            guard !v.isEmpty, let data = FileManager.default.contents(atPath: v) else { return "cannot read the file" }
            guard String(decoding: data, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
                return "is not a PEM file of certificates (-----BEGIN CERTIFICATE-----)"
            }
            s.appleAPI.caFile = v
            return nil
        },
        seconds("BOUNCER_APPLE_API_TIMEOUT_SECONDS",
                "most one call to Apple may take, retries included (default 4; a lookup may make two)") {
            $0.appleAPI.callBudget = $1
        },
        Variable(name: "BOUNCER_TLS_CERT_FILE",
                 help: "PEM certificate chain (leaf first): serve HTTPS; needs BOUNCER_TLS_KEY_FILE (default unset: HTTP)") {
            s, v in
            guard !v.isEmpty, !v.utf8.contains(0) else { return "must be a file path" }
            s.tlsCertificateFile = v
            return nil
        },
        Variable(name: "BOUNCER_TLS_KEY_FILE", help: "PEM private key of BOUNCER_TLS_CERT_FILE; SIGHUP reloads both") {
            s, v in
            guard !v.isEmpty, !v.utf8.contains(0) else { return "must be a file path" }
            s.tlsKeyFile = v
            return nil
        },
        seconds("BOUNCER_TLS_RELOAD_CHECK_SECONDS", "how often the TLS files are checked for changes (default 60)") {
            $0.tlsReloadCheck = $1
        },
        int("BOUNCER_HTTP_REDIRECT_PORT", "plain-HTTP port redirecting to HTTPS, also serving /healthz (default unset)",
            0...65535) { $0.httpRedirectPort = $1 },
        Variable(name: "BOUNCER_PUBLIC_HOST",
                 help: "host[:port] clients use for HTTPS: the only host the redirect port answers for and names; "
                     + "unset = the certificate's DNS and IP names (default unset)") { s, v in
            guard let host = PublicHost(v) else { return "must be a host name or IP address, optionally with :port" }
            s.publicHost = host
            return nil
        },
        Variable(name: "BOUNCER_ACCESS_LOG", help: "JSON access log on stderr: on|off (default on)") { s, v in
            switch v.lowercased() {
            case "on", "true", "1", "yes": s.accessLog = true
            case "off", "false", "0", "no": s.accessLog = false
            default: return "must be on or off"
            }
            return nil
        },
    ] + operationsVariables + reconcileVariables + consumptionVariables + webhookVariables + auditVariables

    /// An `https` URL (any path prefix), or `http` to 127.0.0.1/localhost only (a local fake).
    private static func appleURL(
        _ name: String, _ help: String, _ set: @escaping @Sendable (inout ServeSettings, String) -> Void
    ) -> Variable {
        Variable(name: name, help: help) { s, v in
            guard let url = URLComponents(string: v), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
                  url.user == nil, url.password == nil, url.query == nil, url.fragment == nil,
                  scheme == "https" || (scheme == "http" && ["127.0.0.1", "localhost", "[::1]"].contains(host))
            else { return "must be an https:// URL (no credentials, query or fragment)" }
            set(&s, v.hasSuffix("/") ? String(v.dropLast()) : v)
            return nil
        }
    }

    /// The shortest admin or metrics token `serve` accepts: `openssl rand -base64 32` gives 44 characters.
    static let minimumTokenLength = 32

    /// Every example token the repository ships (README, `deploy/.env.example`, `deploy/k8s/secret.example.yaml`,
    /// and the values they replaced), lowercased: a server started with one of them runs with a published secret.
    /// `ServeTokenRuleTests` reads those files and fails when one shows a token missing here.
    static let placeholderTokens: Set<String> = [
        "change-me-to-a-long-random-string",
        "change_me_to_a_long_random_string",
        "change_me_to_the_output_of_openssl_rand_base64_32",
        "example-only-replace-with-openssl-rand-hex-32",
        "replace-with-the-output-of-openssl-rand-base64-32",
    ]

    /// Why `token` may not be an admin or metrics token (too short, or a shipped placeholder); nil when it may.
    static func tokenProblem(_ token: String) -> String? {
        if token.utf8.count < minimumTokenLength {
            return "must be at least \(minimumTokenLength) characters; make one with `openssl rand -base64 32`"
        }
        if placeholderTokens.contains(token.lowercased()) {
            return "is the placeholder from the repository's examples, which everyone can read; make a real one with "
                + "`openssl rand -base64 32`"
        }
        return nil
    }

    static let secretVariables: Set<String> = [
        "BOUNCER_ADMIN_TOKEN", "DATABASE_URL", "BOUNCER_METRICS_TOKEN", "BOUNCER_ENCRYPTION_KEY",
        "BOUNCER_ENCRYPTION_KEY_PREVIOUS",
    ]

    /// Reads every known variable; returns all problems at once so an operator fixes them in one go.
    public static func fromEnvironment(_ environment: [String: String]) -> Result<ServeSettings, ConfigurationProblems> {
        var settings = ServeSettings()
        var problems: [String] = []
        for variable in variables {
            guard let value = environment[variable.name] else { continue }
            if let problem = variable.apply(&settings, value) {
                // Secrets (and URLs that may carry a password) are never echoed.
                let shown = secretVariables.contains(variable.name) ? "<redacted>" : value.debugDescription
                problems.append("\(variable.name)=\(shown): \(problem)")
            }
        }
        // Rules across variables (each value on its own was fine).
        if settings.previousEncryptionKey != nil, settings.encryptionKey == nil {
            problems.append("BOUNCER_ENCRYPTION_KEY_PREVIOUS is set without BOUNCER_ENCRYPTION_KEY: during a rotation "
                + "the new key is BOUNCER_ENCRYPTION_KEY and the old one BOUNCER_ENCRYPTION_KEY_PREVIOUS")
        }
        if let previous = settings.previousEncryptionKey, previous == settings.encryptionKey {
            problems.append("BOUNCER_ENCRYPTION_KEY_PREVIOUS equals BOUNCER_ENCRYPTION_KEY: set the new key as "
                + "BOUNCER_ENCRYPTION_KEY, or unset BOUNCER_ENCRYPTION_KEY_PREVIOUS once `bouncer credentials "
                + "reencrypt` has run")
        }
        switch (settings.tlsCertificateFile, settings.tlsKeyFile) {
        case (let certificate?, let key?):
            settings.server.tls = TLSServerConfiguration(certificateChainFile: certificate, privateKeyFile: key)
        case (nil, nil):
            if settings.httpRedirectPort != nil {
                problems.append("BOUNCER_HTTP_REDIRECT_PORT is set without HTTPS: it redirects to the HTTPS listener, "
                    + "so set BOUNCER_TLS_CERT_FILE and BOUNCER_TLS_KEY_FILE too (or unset it)")
            }
        case (_?, nil):
            problems.append("BOUNCER_TLS_CERT_FILE is set without BOUNCER_TLS_KEY_FILE: HTTPS needs both the "
                + "certificate chain and its private key")
        case (nil, _?):
            problems.append("BOUNCER_TLS_KEY_FILE is set without BOUNCER_TLS_CERT_FILE: HTTPS needs both the "
                + "certificate chain and its private key")
        }
        if let redirect = settings.httpRedirectPort, redirect != 0, redirect == settings.server.port {
            problems.append("BOUNCER_HTTP_REDIRECT_PORT equals BOUNCER_PORT: the redirect needs a port of its own")
        }
        return problems.isEmpty ? .success(settings) : .failure(ConfigurationProblems(messages: problems))
    }

    static var helpText: String {
        let width = variables.map(\.name.count).max() ?? 0
        return variables.map { "  " + $0.name + String(repeating: " ", count: width - $0.name.count + 2) + $0.help }
            .joined(separator: "\n") + "\n"
    }
}

/// How `bouncer serve` reaches Apple's App Store Server API.
public struct AppleAPISettings: Sendable {
    static let defaultProductionURL = AppStoreServerClient.Configuration.defaultProductionURL
    static let defaultSandboxURL = AppStoreServerClient.Configuration.defaultSandboxURL
    /// Production base URL.
    var productionURL = defaultProductionURL
    /// Sandbox base URL.
    var sandboxURL = defaultSandboxURL
    /// Extra trusted CA certificates (PEM), besides the system's roots.
    var caFile: String?
    /// One call's total budget, retries and waits included: a lookup (Production, then Sandbox) stays within the
    /// default 10 s handler timeout.
    public var callBudget: Duration = .seconds(4)
}

/// Every invalid `BOUNCER_*` variable, reported together.
public struct ConfigurationProblems: Error, Sendable {
    /// One line per invalid variable: its name and what it must be.
    public let messages: [String]
}
