import Domain
import HTTPCore

/// The public HTTP API: receipts, subscriptions, promotional-offer signatures, the App Store notification webhook and admin provisioning (see `openapi.yaml`).
public enum Routes {
    /// Registers every API route on `router`. Health routes belong to the executable.
    public static func register(on router: inout Router, _ deps: APIDependencies) {
        let api = APIHandlers(deps: deps)
        func add(
            _ method: HTTPMethod, _ pattern: String, _ rateLimits: RateLimitScopes, maxBodyBytes: Int? = nil,
            _ handler: @escaping @Sendable (APIHandlers, Request) throws -> Response
        ) {
            let consoleSession = rateLimits.contains(.admin) && pattern != APIHandlers.sessionPath
            router.add(method, pattern, rateLimits: rateLimits, maxBodyBytes: maxBodyBytes) { request in
                do {
                    // A console session stands in for the admin token (ConsoleSession.swift); the bearer path is untouched.
                    let request = consoleSession ? try api.authenticatingConsoleSession(request) : request
                    return try handler(api, request)
                } catch {
                    // Mapped errors are rendered by the server; the rest become its 500 (already logged here).
                    if let mapped = ErrorMapping.httpError(for: error, request: request, log: deps.log) { throw mapped }
                    throw error
                }
            }
        }
        // Rate limits (BOUNCER_RATE_LIMIT_*): every API route per client address; the public key ships inside
        // apps, so anyone can replay it: per key; a backend presenting its secret key has its own bucket.
        let app: RateLimitScopes = [.client, .publicKey]
        let admin: RateLimitScopes = [.client, .admin]
        // StoreKit 1 receipts of long purchase histories exceed 100 KB: this route alone takes larger bodies.
        add(.post, "/v1/receipts/:publicKey", app, maxBodyBytes: deps.maxReceiptBodyBytes) { try $0.postReceipt($1) }
        add(.post, ErrorMapping.appTransactionRoute, app) { try $0.postAppTransaction($1) }
        add(.get, "/v1/subscriptions/:publicKey/:userId", app.union(.secretKey)) { try $0.getSubscriptions($1) }
        add(.post, ErrorMapping.offerSignaturesRoute, app) { try $0.postOfferSignature($1) }
        add(.get, ErrorMapping.entitlementTokenRoute, app.union(.secretKey)) { try $0.getEntitlementToken($1) }
        add(.get, "/.well-known/jwks.json", .client) { try $0.getJWKS($1) }
        // Apple is the only caller of the webhook and retries for days: only the per-client limit applies.
        add(.post, ErrorMapping.notificationRoute, .client) { try $0.postNotification($1) }

        add(.post, "/v1/admin/projects", admin) { try $0.createProject($1) }
        add(.get, "/v1/admin/projects", admin) { try $0.listProjects($1) }
        add(.get, "/v1/admin/projects/:id", admin) { try $0.showProject($1) }
        add(.patch, "/v1/admin/projects/:id", admin) { try $0.updateProject($1) }
        add(.delete, "/v1/admin/projects/:id", admin) { try $0.deleteProject($1) }
        add(.post, "/v1/admin/projects/:id/rotate-keys", admin) { try $0.rotateKeys($1) }
        add(.get, "/v1/admin/projects/:id/products", admin) { try $0.listProducts($1) }
        add(.put, "/v1/admin/projects/:id/products/:productId", admin) { try $0.putProduct($1) }
        add(.delete, "/v1/admin/projects/:id/products/:productId", admin) { try $0.deleteProduct($1) }
        add(.get, "/v1/admin/projects/:id/notifications", admin) { try $0.listNotifications($1) }
        add(.put, ErrorMapping.appStoreCredentialsRoute, admin) { try $0.putAppStoreCredentials($1) }
        add(.get, ErrorMapping.appStoreCredentialsRoute, admin) { try $0.getAppStoreCredentials($1) }
        add(.delete, ErrorMapping.appStoreCredentialsRoute, admin) { try $0.deleteAppStoreCredentials($1) }
        add(.post, "/v1/admin/projects/:id/app-store/test-notification", admin) { try $0.requestTestNotification($1) }
        add(.get, "/v1/admin/projects/:id/app-store/test-notification/:token", admin) { try $0.getTestNotification($1) }
        add(.post, "/v1/admin/projects/:id/subscriptions/:originalTransactionId/extend", admin) {
            try $0.extendSubscription($1)
        }
        add(.post, "/v1/admin/projects/:id/reconcile", admin) { try $0.reconcileProject($1) }
        add(.get, "/v1/admin/projects/:id/metrics/overview", admin) { try $0.overview($1) }
        add(.post, APIHandlers.sessionPath, admin) { try $0.signIn($1) }
        add(.get, APIHandlers.sessionPath, admin) { try $0.showSession($1) }
        add(.delete, APIHandlers.sessionPath, admin) { try $0.signOut($1) }
        add(.delete, "/v1/admin/sessions", admin) { try $0.signOutEverywhere($1) }
        add(.get, "/v1/admin/projects/:id/reconcile/runs", admin) { try $0.listReconcileRuns($1) }
        // A project's users: the admin token or the project's secret key (a customer's backend); both share the
        // admin bucket (these are support tools, not a hot path).
        let support = admin
        add(.post, "/v1/admin/projects/:id/users/:userId/grants", support) { try $0.createGrant($1) }
        add(.delete, "/v1/admin/projects/:id/users/:userId/grants/:grantId", support) { try $0.deleteGrant($1) }
        add(.get, "/v1/admin/projects/:id/users/:userId/timeline", support) { try $0.getTimeline($1) }
        add(.get, "/v1/admin/projects/:id/users/:userId/export", support) { try $0.exportUser($1) }
        add(.delete, "/v1/admin/projects/:id/users/:userId", support) { try $0.eraseUser($1) }
        add(.get, "/v1/admin/projects/:id/transactions/:transactionId", support) { try $0.getTransactionHolders($1) }
        add(.put, "/v1/admin/projects/:id/webhook", admin) { try $0.putWebhook($1) }
        add(.get, "/v1/admin/projects/:id/webhook", admin) { try $0.getWebhook($1) }
        add(.delete, "/v1/admin/projects/:id/webhook", admin) { try $0.deleteWebhook($1) }
        add(.post, "/v1/admin/projects/:id/webhook/rotate-secret", admin) { try $0.rotateWebhookSecret($1) }
        add(.post, "/v1/admin/projects/:id/webhook/test", admin) { try $0.testWebhook($1) }
        add(.get, "/v1/admin/projects/:id/webhook/deliveries", admin) { try $0.listWebhookDeliveries($1) }
        add(.post, "/v1/admin/projects/:id/webhook/deliveries/:eventId/retry", admin) {
            try $0.retryWebhookDelivery($1)
        }
    }
}

/// The handlers, sharing the dependencies and what is derived from them once at start-up.
struct APIHandlers: Sendable {
    let deps: APIDependencies
    /// The admin token's digest; `nil` when the admin API is disabled.
    let adminDigest: [UInt8]?
    /// What console sessions store of the admin token (`ConsoleSessionRules.adminFingerprint`); `nil` when disabled.
    let adminFingerprint: [UInt8]?

    init(deps: APIDependencies) {
        self.deps = deps
        if let token = deps.adminToken, !token.isEmpty {
            adminDigest = deps.hasher.hash(token)
            adminFingerprint = ConsoleSessionRules.adminFingerprint(adminToken: token, hasher: deps.hasher)
        } else {
            adminDigest = nil
            adminFingerprint = nil
        }
    }
}
