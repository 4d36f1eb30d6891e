public import Domain
public import HTTPCore

/// The public HTTP API: receipts, subscriptions, promotional-offer signatures, the App Store notification webhook and admin provisioning (see `openapi.yaml`).
///
/// Each resource has a controller in the file of its name (`ReceiptsController` in `Receipts.swift`…) that declares
/// its routes (`APIRoute`: method, path, rate limits, body limit, who may call it, error wording) next to their
/// handlers. This is the one list of controllers, each built once from the dependencies it uses.
public enum Routes {
    /// Registers every API route on `router`. Health routes belong to the executable.
    public static func register(on router: inout Router, _ deps: APIDependencies) {
        let keys = KeyAuth(projects: deps.projects, hasher: deps.hasher, now: deps.now)
        let admin = AdminAuth(deps, keys: keys)
        let gate = RouteGate(keys: keys, admin: admin, log: deps.log,
                             usage: deps.usage.map { UsageGate(meter: $0, now: deps.now) })
        for controller in controllers(deps, admin: admin) {
            for route in controller.routes { gate.add(route, to: &router) }
        }
    }

    /// Every route as declared: method, pattern and the permission an admin principal needs (nil: not an admin
    /// route — public keys, the JWKS, the console's sign-in). For the tests that hold the declarations to the
    /// contract (`openapi.yaml`'s `x-permission`) and walk every admin route.
    public static func declarations(_ deps: APIDependencies) -> [(method: HTTPMethod, pattern: String, permission: Permission?)] {
        let keys = KeyAuth(projects: deps.projects, hasher: deps.hasher, now: deps.now)
        return controllers(deps, admin: AdminAuth(deps, keys: keys)).flatMap { controller in
            controller.routes.map { ($0.method, $0.pattern, $0.permission) }
        }
    }

    /// The one list of controllers, each built once from the dependencies it uses.
    private static func controllers(_ deps: APIDependencies, admin: AdminAuth) -> [any APIController] {
        let keys = admin.keys
        // One credential use case for every route that reads a project's App Store credentials.
        let credentials = CredentialAdministration(
            projects: deps.projects, store: deps.credentials, sealer: deps.sealer, inspector: deps.keyInspector,
            now: deps.now)
        let projects = ProjectAdministration(store: deps.projects, hasher: deps.hasher, now: deps.now)
        let appStoreActions = AppStoreActions(
            projects: deps.projects, credentials: credentials, appStore: deps.appStore, verifier: deps.verifier,
            store: deps.appStoreActions, now: deps.now)
        let appAccountTokens = AppAccountTokens(actions: appStoreActions, purchases: deps.purchases)
        return [
            ReceiptsController(
                keys: keys, purchases: deps.purchases, verifier: deps.verifier,
                transactionLookup: TransactionLookup(credentials: credentials, appStore: deps.appStore, verifier: deps.verifier),
                lookupBudget: deps.lookupBudget, entitlementTokens: deps.entitlementTokens,
                maxReceiptBodyBytes: deps.maxReceiptBodyBytes, maxReceiptRecords: deps.maxReceiptRecords,
                now: deps.now, log: deps.log),
            SubscriptionsController(keys: keys, purchases: deps.purchases, now: deps.now),
            AppTransactionsController(
                verifier: deps.verifier, store: deps.appTransactions, now: deps.now, keys: keys,
                transactionLookup: TransactionLookup(credentials: credentials, appStore: deps.appStore, verifier: deps.verifier),
                lookupBudget: deps.lookupBudget),
            OffersController(offerSignatures: OfferSignatures(
                projects: deps.projects, credentials: credentials, signer: deps.offerSigner, now: deps.now)),
            IntroductoryOffersController(keys: keys, eligibility: IntroductoryOfferEligibility(
                projects: deps.projects, credentials: credentials, signer: deps.offerSigner,
                facts: deps.introductoryOffers, now: deps.now)),
            EntitlementTokensController(keys: keys, tokens: deps.entitlementTokens),
            NotificationsController(
                projects: deps.projects, verifier: deps.verifier, store: deps.notifications, now: deps.now),
            ProjectsController(administration: projects),
            ProductsController(administration: projects),
            AppStoreCredentialsController(administration: credentials),
            AppStoreActionsController(actions: appStoreActions),
            AppAccountTokensController(tokens: appAccountTokens),
            MassRenewalExtensionsController(extensions: MassRenewalExtensions(actions: appStoreActions)),
            ReconciliationController(reconciler: deps.reconciliation),
            MetricsController(projects: deps.projects, store: deps.overview, now: deps.now),
            ChartsController(projects: deps.projects, store: deps.charts, now: deps.now),
            TaxRatesController(store: deps.charts),
            TransactionExportController(projects: deps.projects, store: deps.charts, now: deps.now),
            CustomerListController(projects: deps.projects, store: deps.customerList, now: deps.now),
            ConsoleController(admin: admin, console: deps.console),
            MembersController(admin: admin),
            CustomersController(
                projects: deps.projects,
                support: CustomerSupport(store: deps.customers, projects: deps.projects, now: deps.now),
                orders: OrderLookup(projects: deps.projects, credentials: credentials, appStore: deps.appStore,
                                    verifier: deps.verifier, holders: deps.customers),
                appAccountTokens: appAccountTokens,
                now: deps.now),
            WebhooksController(administration: deps.webhooks),
            AccountsController(administration: admin.accounts),
            UsageController(meter: deps.usage, now: deps.now),
            AuditLogController(log: deps.auditLog.map { AuditLog(store: $0) }),
            RetentionController(projects: deps.projects, verifier: deps.verifier, retention: deps.retention.map {
                RetentionMessaging(store: $0, projects: deps.projects, offers: OfferSignatures(
                    projects: deps.projects, credentials: credentials, signer: deps.offerSigner, now: deps.now),
                    now: deps.now)
            }),
            RetentionMessagesController(administration: deps.retention.map {
                RetentionMessageAdministration(projects: deps.projects, credentials: credentials,
                                               api: deps.retentionMessaging, store: $0)
            }),
        ]
    }
}

/// A resource's routes, declared by the controller that serves them.
protocol APIController: Sendable {
    /// Every route of the resource, each declared next to its handler's name.
    var routes: [APIRoute] { get }
}

/// Rate limits (`BOUNCER_RATE_LIMIT_*`) of the API's routes: every route per client address; the public key ships
/// inside apps, so anyone can replay it: per key; a backend presenting its secret key has its own bucket.
extension RateLimitScopes {
    /// Routes an app calls with its public key.
    static let app: RateLimitScopes = [.client, .publicKey]
    /// Reads a backend may make with the secret key: its own bucket.
    static let appRead: RateLimitScopes = [.client, .publicKey, .secretKey]
    /// Admin routes, and the support routes a customer's backend calls with its secret key: per client and per
    /// presented credential (`Routes.adminRateLimitKey`); support tools, not a hot path.
    static let adminAPI: RateLimitScopes = [.client, .admin]
}

/// Who may call a route, checked before its handler runs (in this order: console session, then the check).
enum Access: Sendable {
    /// Anyone (the JWKS).
    case anyone
    /// An app: the project named by the `:publicKey` path parameter; an unknown key is 401
    /// `AUTH_INVALID_PUBLIC_KEY` with `suggestion`. The handler receives the project.
    case publicKey(suggestion: String)
    /// An admin principal (`AdminAuth.principal`: the admin token or its console session, or an API key) that
    /// reaches the route's resource (`RouteScope`) and may do `Permission` (`Role.permissions`).
    case admin(Permission)
    /// Like `.admin`, or the secret key of the project named by `:id` (a customer's backend), which may do
    /// everything these routes do for its own project; the id is checked first (400 for a malformed one).
    case adminOrSecretKey(Permission)
    /// The console's own session routes: the handler checks the admin token (sign-in) or the session cookie.
    case consoleSession
}

/// What a route's errors are about, where the same error reads differently per route (`ErrorMapping`).
struct ErrorContext: Sendable {
    /// Which signed field a refused signature blames, and whose words explain it.
    enum SignedData: Sendable {
        /// `signed_transaction_info` (StoreKit 2 transactions).
        case transaction
        /// `signed_app_transaction`.
        case appTransaction
        /// `signedPayload` of Apple's notification webhook: the reader is the operator of App Store Connect.
        case notification
        /// `signedPayload` of Apple's real-time retention request (Retention Messaging): the same reader.
        case retentionRequest
    }

    /// What a missing `BOUNCER_ENCRYPTION_KEY` stops on this route.
    enum EncryptionKeyUse: Sendable {
        /// Opening credentials stored earlier (the routes that call Apple).
        case openCredentials
        /// Storing App Store credentials.
        case storeCredentials
        /// Signing entitlement tokens.
        case signTokens
        /// Storing a webhook's signing secret.
        case storeWebhookSecret
        /// Storing a member's TOTP secret.
        case storeMemberSecret
    }

    /// What an unknown product is on this route.
    enum Product: Sendable {
        /// A product of the admin API's mappings.
        case mapping
        /// The product of a promotional offer an app asked to sign: an admin's mapping is missing.
        case offer
    }

    var signedData = SignedData.transaction
    var encryptionKey = EncryptionKeyUse.openCredentials
    var product = Product.mapping

    /// The wording most routes use.
    static let standard = ErrorContext()
}

/// One route as its controller declares it.
struct APIRoute: Sendable {
    /// What the gate runs once the caller is allowed.
    enum Handler: Sendable {
        /// Routes without a public key.
        case request(@Sendable (Request) throws -> Response)
        /// Public-key routes: the project the key names.
        case project(@Sendable (Request, Project) throws -> Response)
        /// Admin routes whose answer depends on who asks (lists, creations): the admin principal.
        case principal(@Sendable (Request, Principal) throws -> Response)
    }

    let method: HTTPMethod
    /// The path template (`:name` segments are parameters), as `openapi.yaml` names it with `{name}`.
    let pattern: String
    /// The rate limits that guard the route (`BOUNCER_RATE_LIMIT_*`).
    let rateLimits: RateLimitScopes
    /// Raises the server's body limit for this route only (`Router.add(maxBodyBytes:)`).
    private(set) var maxBodyBytes: Int?
    /// Who may call the route.
    let access: Access
    /// How the route's errors read where the same error reads differently per route.
    let errors: ErrorContext
    let handler: Handler
    /// What a public-key route's success counts toward its account's usage (`counting`).
    private(set) var counts: UsageKind?
    /// Whether the account's quotas stop this public-key route (`UsageGate`).
    private(set) var underQuota = true
    /// The path parameter naming a member who may call this admin route for themself without its permission
    /// (`forSelf`); nil: everyone needs the permission.
    private(set) var selfParameter: String?
    /// A public-key route's answer from memory on the event loop (`answeringFromMemory`).
    private(set) var fromMemory: (@Sendable (Request, Project) -> Response?)?

    /// This public-key route, answered on the event loop when `answer` can from memory (`Router.add(inline:)`):
    /// `answer` gets the project from the projects' cache and returns nil, having done nothing, whenever the handler
    /// would need the database (or anything that may block); the handler then answers on the pool as before.
    func answeringFromMemory(_ answer: @escaping @Sendable (Request, Project) -> Response?) -> APIRoute {
        var route = self
        route.fromMemory = answer
        return route
    }

    /// This route, counting each success as `kind`; `quota: false` exempts it from the account's quotas.
    func counting(_ kind: UsageKind, quota: Bool = true) -> APIRoute {
        var route = self
        route.counts = kind
        route.underQuota = quota
        return route
    }

    /// This admin route, open to the member whom the path parameter `parameter` names without the route's
    /// permission (their own TOTP); anyone else still needs it.
    func forSelf(_ parameter: String) -> APIRoute {
        var route = self
        route.selfParameter = parameter
        return route
    }

    /// What an admin route requires of its caller (`Access.admin`, `.adminOrSecretKey`); nil for the others.
    var permission: Permission? {
        switch access {
        case .admin(let permission), .adminOrSecretKey(let permission): return permission
        case .anyone, .publicKey, .consoleSession: return nil
        }
    }
}

// Beside the synthesised memberwise init, which each of these calls.
extension APIRoute {
    /// A route an app calls with its public key in the path; the handler gets the project.
    init(
        _ method: HTTPMethod, _ pattern: String, _ rateLimits: RateLimitScopes, maxBodyBytes: Int? = nil,
        publicKey suggestion: String, errors: ErrorContext = .standard,
        _ handler: @escaping @Sendable (Request, Project) throws -> Response
    ) {
        self.init(method: method, pattern: pattern, rateLimits: rateLimits, maxBodyBytes: maxBodyBytes,
                  access: .publicKey(suggestion: suggestion), errors: errors, handler: .project(handler))
    }

    /// A route without a public key: `access` says who may call it (`.admin` routes take `.adminAPI` limits).
    init(
        _ method: HTTPMethod, _ pattern: String, _ rateLimits: RateLimitScopes, access: Access,
        maxBodyBytes: Int? = nil, errors: ErrorContext = .standard,
        _ handler: @escaping @Sendable (Request) throws -> Response
    ) {
        self.init(method: method, pattern: pattern, rateLimits: rateLimits, maxBodyBytes: maxBodyBytes, access: access,
                  errors: errors, handler: .request(handler))
    }

    /// An admin route whose handler needs the principal (`access` is `.admin` or `.adminOrSecretKey`).
    init(
        _ method: HTTPMethod, _ pattern: String, _ rateLimits: RateLimitScopes, access: Access,
        errors: ErrorContext = .standard, _ handler: @escaping @Sendable (Request, Principal) throws -> Response
    ) {
        self.init(method: method, pattern: pattern, rateLimits: rateLimits, access: access, errors: errors,
                  handler: .principal(handler))
    }
}

/// Registers declared routes: runs each route's access check, then its handler, and maps what they throw.
struct RouteGate: Sendable {
    let keys: KeyAuth
    let admin: AdminAuth
    let log: @Sendable (String) -> Void
    /// The account quotas and usage counts of public-key routes; nil: none.
    let usage: UsageGate?

    /// Adds `route` to `router` behind its access check and the error mapping.
    func add(_ route: APIRoute, to router: inout Router) {
        let gate = self
        var inline: InlineHandler?
        if let answer = route.fromMemory {
            inline = { request in gate.runFromMemory(route, answer, request) }
        }
        router.add(route.method, route.pattern, rateLimits: route.rateLimits, maxBodyBytes: route.maxBodyBytes,
                   inline: inline) { request in
            do {
                return try gate.run(route, request)
            } catch {
                // Mapped errors are rendered by the server; the rest become its 500 (already logged here).
                if let mapped = ErrorMapping.httpError(for: error, request: request, context: route.errors, log: gate.log) {
                    throw mapped
                }
                throw error
            }
        }
    }

    /// `run` for a public-key route from memory only: the project from the projects' cache, an account whose
    /// quotas take nothing per request (a per-second quota spends a token: left to `run`), then `answer`, and the
    /// success counted as `run` counts it. Nil, with nothing done, whenever any of it is not in memory.
    private func runFromMemory(_ route: APIRoute, _ answer: (Request, Project) -> Response?, _ request: Request)
        -> Response?
    {
        guard case .publicKey = route.access, let project = keys.projectInMemory(request.pathParameters["publicKey"])
        else { return nil }
        if route.underQuota, let usage, !usage.admitsFreely(project) { return nil }
        guard let response = answer(request, project) else { return nil }
        if let kind = route.counts, response.status < 300 { usage?.count(kind, project) }
        return response
    }

    private func run(_ route: APIRoute, _ request: Request) throws -> Response {
        switch (route.access, route.handler) {
        case (.publicKey(let suggestion), .project(let handler)):
            let project = try keys.project(publicKey: request.pathParameters["publicKey"], suggestion: suggestion)
            if route.underQuota { try usage?.admit(project) }
            let response = try handler(request, project)
            if let kind = route.counts, response.status < 300 { usage?.count(kind, project) }
            return response
        case (.anyone, .request(let handler)), (.consoleSession, .request(let handler)):
            return try handler(request)
        case (.admin(let permission), .request(let handler)):
            let request = try admin.authenticatingConsoleSession(request)
            let principal = try admin.principal(request, route: route, permission: permission)
            return try audited(route, request, actor: AuditActor(principal), principal: principal) {
                try handler(request)
            }
        case (.admin(let permission), .principal(let handler)):
            let request = try admin.authenticatingConsoleSession(request)
            let principal = try admin.principal(request, route: route, permission: permission)
            return try audited(route, request, actor: AuditActor(principal), principal: principal) {
                try handler(request, principal)
            }
        case (.adminOrSecretKey(let permission), .request(let handler)):
            let request = try admin.authenticatingConsoleSession(request)
            let projectId = try PathParameters.projectId(request)
            var principal: Principal?
            if try !admin.authorizedBySecretKey(request, projectId: projectId) {
                principal = try admin.principal(request, route: route, permission: permission)
            }
            let actor = principal.map(AuditActor.init) ?? .secretKey(projectId: projectId)
            return try audited(route, request, actor: actor, principal: principal) { try handler(request) }
        case (.publicKey, .request), (_, .project), (.anyone, .principal), (.consoleSession, .principal),
             (.publicKey, .principal), (.adminOrSecretKey, .principal):
            throw RouteDeclarationMismatch(pattern: route.pattern)   // unreachable: `APIRoute`'s initializers pair them
        }
    }
}

/// A route whose access and handler do not fit (a bug of the declaration): 500 `INTERNAL_ERROR`.
struct RouteDeclarationMismatch: Error, CustomStringConvertible {
    let pattern: String
    var description: String { "route \(pattern): its access check and handler do not fit" }
}
