public import Domain
public import Foundation
public import HTTPCore

/// Everything the API needs, as ports: the executable wires the real adapters, tests wire fakes.
public struct APIDependencies: Sendable {
    /// Projects, keys and product mappings.
    public let projects: any ProjectStore
    /// Transactions, purchases and user bindings.
    public let purchases: any PurchaseStore
    /// App Store Server Notifications: the audit log and their facts, applied once; `nil`: the webhook (so Apple
    /// retries) and the admin list answer 503.
    public let notifications: (any NotificationStore)?
    /// App transactions (`POST /v1/app-transactions`).
    public let appTransactions: any AppTransactionStore
    /// Verifies signed App Store data for a project.
    public let verifier: any SignedDataVerifying
    /// Per-project App Store Server API credentials (the private key only sealed).
    public let credentials: any AppStoreCredentialStore
    /// Seals private keys under `BOUNCER_ENCRYPTION_KEY`; `nil` when it is unset (storing credentials is refused).
    public let sealer: (any CredentialSealing)?
    /// Checks that a private key is a PKCS#8 P-256 key and fingerprints it.
    public let keyInspector: any PrivateKeyInspecting
    /// Signs promotional offers with a project's In-App Purchase key (`POST /v1/offers/:publicKey/signatures`).
    public let offerSigner: any PromotionalOfferSigning
    /// The person's redeemed introductory offers (`POST /v1/offers/:publicKey/introductory-eligibility`); unwired
    /// answers 503.
    public let introductoryOffers: any IntroductoryOfferFactsStore
    /// Apple's App Store Server API (lookups by transaction id); `nil` when not wired: lookups answer 503
    /// `APPLE_UNAVAILABLE`.
    public let appStore: (any AppleServerAPI)?
    /// Budgets the Apple calls of lookups by transaction id and remembers Apple's "not found" (`BOUNCER_APPLE_LOOKUP_*`);
    /// `nil`: unlimited.
    public let lookupBudget: LookupBudget?
    /// The operator helpers' storage (test notifications, renewal extensions); unwired → 503.
    public let appStoreActions: any AppStoreActionStore
    /// Hashes secret keys (for storage and comparison).
    public let hasher: any SecretKeyHashing
    /// Users as support sees them: grants, timeline, export, erase (`/v1/admin/projects/:id/users/…`); unwired
    /// answers 503.
    public let customers: any CustomerStore
    /// Reconciliation with Apple (`POST /v1/admin/projects/:id/reconcile`); `nil` answers 503 (no App Store client
    /// wired).
    public let reconciliation: Reconciliation?
    /// Entitlement tokens and the JWKS; `nil` answers 503 on the token and JWKS routes and leaves receipts without a
    /// token.
    public let entitlementTokens: EntitlementTokens?
    /// The body limit of `POST /v1/receipts` (`BOUNCER_MAX_RECEIPT_BODY_BYTES`, default 1 MiB): StoreKit 1
    /// receipts of long purchase histories exceed 100 KB. It only raises the server's `maxBodyBytes` for that
    /// route.
    public let maxReceiptBodyBytes: Int
    /// In-app records one StoreKit 1 receipt may carry (`BOUNCER_MAX_RECEIPT_RECORDS`, default 2,000; the 2020
    /// receipt of Tests/Fixtures has 187): more is refused with 413 `RECEIPT_TOO_MANY_RECORDS` before any database
    /// work.
    public let maxReceiptRecords: Int
    /// Webhook configuration and deliveries (`/v1/admin/projects/:id/webhook…`); `nil` answers 503.
    public let webhooks: WebhookAdministration?
    /// `BOUNCER_ADMIN_TOKEN`; `nil` (or empty) disables the admin API (404 `ADMIN_API_DISABLED`).
    public let adminToken: String?
    /// Wrong admin tokens per client address (bearer and console sign-in): 10 a minute lock the address out with
    /// 429 `AUTH_TOO_MANY_FAILURES`, each further lockout twice as long (`FailureLockout.Policy.standard`).
    public let adminAuthFailures: FailureLockout
    /// The console's sessions (`/v1/admin/session`); `nil` answers 503 there and admin routes take only the bearer
    /// token.
    public let consoleSessions: (any ConsoleSessionStore)?
    /// How the console's cookie is issued (`BOUNCER_CONSOLE_*`).
    public let console: ConsoleSettings
    /// The dashboard's overview (`GET /v1/admin/projects/:id/metrics/overview`); `nil` answers 503.
    public let overview: (any OverviewMetricsStore)?
    /// The charts, money settings and exchange rates (issue 26); `nil` answers 503 there.
    public let charts: (any ChartStore)?
    /// The customer list (`GET /v1/admin/projects/:id/customers`); `nil` answers 503 there.
    public let customerList: (any CustomerListStore)?
    /// The clock; status is always evaluated at this instant.
    /// Accounts and their API keys (`bk_…` on the admin routes); nil: the admin token only, and the account routes
    /// answer 503.
    public let accounts: (any AccountStore)?
    /// Usage counts and quotas per account (issue 24); nil: no quotas, usage routes answer 503.
    public let usage: UsageMeter?
    /// Members (people with a password, `/v1/admin/accounts/:id/members`) and the cryptography they need; nil: the
    /// member routes answer 503 and sign-in takes only the admin token.
    public let members: (store: any MemberStore, crypto: any MemberCryptography)?
    /// The audit log (`GET /v1/admin/audit-log`, and the entries of failed sign-ins); nil: the route answers 503
    /// and only the stores' own entries (each in its change's transaction) are written.
    public let auditLog: (any AuditLogStore)?
    /// Changing admin requests answered 2xx whose store wrote no audit entry: a bug, logged and counted here
    /// (`bouncer_audit_missing_total`).
    public let auditGaps: AuditGaps
    /// Retention Messaging's rules and decisions; `nil` answers 503 on its routes.
    public let retention: (any RetentionStore)?
    /// Apple's Retention Messaging API (the metered App Store client); `nil`: its admin routes answer 503
    /// `APPLE_UNAVAILABLE`.
    public let retentionMessaging: (any RetentionMessagingAPI)?
    public let now: @Sendable () -> Date
    /// One line per server-side failure (500, 503), with the request id; never bodies, keys, tokens or JWS.
    public let log: @Sendable (String) -> Void

    /// Creates the dependencies, complete: nothing is set afterwards, and each controller takes its share once
    /// (`Routes.register`).
    ///
    /// Without `notifications`, the webhook answers 503 (Apple keeps retrying), so wiring that forgets it loses
    /// nothing; likewise without `credentials` or `keyInspector` the credential routes answer 503 (and without
    /// `offerSigner` the offer route), and without `sealer` storing credentials is refused (`ENCRYPTION_KEY_MISSING`).
    /// The optional features (`reconciliation`, `entitlementTokens`, `webhooks`, `consoleSessions`, `overview`)
    /// answer 503 on their routes when absent, as each property says.
    public init(
        projects: any ProjectStore, purchases: any PurchaseStore, verifier: any SignedDataVerifying,
        hasher: any SecretKeyHashing, adminToken: String?, notifications: (any NotificationStore)? = nil,
        credentials: (any AppStoreCredentialStore)? = nil, sealer: (any CredentialSealing)? = nil,
        keyInspector: (any PrivateKeyInspecting)? = nil, offerSigner: (any PromotionalOfferSigning)? = nil,
        appStore: (any AppleServerAPI)? = nil, lookupBudget: LookupBudget? = nil,
        appTransactions: (any AppTransactionStore)? = nil, appStoreActions: (any AppStoreActionStore)? = nil,
        customers: (any CustomerStore)? = nil, reconciliation: Reconciliation? = nil,
        entitlementTokens: EntitlementTokens? = nil, webhooks: WebhookAdministration? = nil,
        maxReceiptBodyBytes: Int = 1024 * 1024, maxReceiptRecords: Int = 2_000,
        adminAuthFailures: FailureLockout = FailureLockout(), consoleSessions: (any ConsoleSessionStore)? = nil,
        console: ConsoleSettings = ConsoleSettings(), overview: (any OverviewMetricsStore)? = nil,
        charts: (any ChartStore)? = nil, customerList: (any CustomerListStore)? = nil,
        accounts: (any AccountStore)? = nil, usage: UsageMeter? = nil,
        members: (store: any MemberStore, crypto: any MemberCryptography)? = nil,
        auditLog: (any AuditLogStore)? = nil, auditGaps: AuditGaps = AuditGaps(),
        retention: (any RetentionStore)? = nil, retentionMessaging: (any RetentionMessagingAPI)? = nil,
        introductoryOffers: (any IntroductoryOfferFactsStore)? = nil,
        now: @escaping @Sendable () -> Date = { Date() }, log: @escaping @Sendable (String) -> Void
    ) {
        self.projects = projects
        self.purchases = purchases
        self.notifications = notifications
        self.appTransactions = appTransactions ?? UnconfiguredAppTransactionStore()
        self.customers = customers ?? UnconfiguredCustomerStore()
        self.credentials = credentials ?? UnconfiguredCredentialStore()
        self.sealer = sealer
        self.keyInspector = keyInspector ?? UnconfiguredKeyInspector()
        self.offerSigner = offerSigner ?? UnconfiguredOfferSigner()
        self.introductoryOffers = introductoryOffers ?? UnconfiguredIntroductoryOfferStore()
        self.appStore = appStore
        self.lookupBudget = lookupBudget
        self.appStoreActions = appStoreActions ?? UnconfiguredAppStoreActionStore()
        self.verifier = verifier
        self.hasher = hasher
        self.reconciliation = reconciliation
        self.entitlementTokens = entitlementTokens
        self.webhooks = webhooks
        self.maxReceiptBodyBytes = maxReceiptBodyBytes
        self.maxReceiptRecords = maxReceiptRecords
        self.adminToken = adminToken
        self.adminAuthFailures = adminAuthFailures
        self.consoleSessions = consoleSessions
        self.console = console
        self.overview = overview
        self.charts = charts
        self.customerList = customerList
        self.accounts = accounts
        self.usage = usage
        self.members = members
        self.auditLog = auditLog
        self.auditGaps = auditGaps
        self.retention = retention
        self.retentionMessaging = retentionMessaging
        self.now = now
        self.log = log
    }
}

/// The answer of a route whose optional port was not wired: "unavailable, retry", never a verdict (503
/// `SERVICE_UNAVAILABLE`; the message and `underlying` go to the log only).
func unwired<Port>(_ port: Port?, _ message: String, _ property: String) throws -> Port {
    guard let port else {
        throw DomainError(.serviceUnavailable, message, underlying: "APIDependencies.\(property) was not wired")
    }
    return port
}

// The stand-ins below are for ports a Domain use case receives (it decides when the port is first asked, so an
// unwired server still answers the use case's earlier refusals, e.g. 400 APP_STORE_CREDENTIALS_MISSING, first).

/// Stands in when no app-transaction store was wired: every call is "unavailable, retry", never a verdict.
struct UnconfiguredAppTransactionStore: AppTransactionStore {
    func recordAppTransaction(_ facts: AppTransactionFacts, userId: String?, project: Project, now: Date) throws
        -> RecordedAppTransaction
    {
        throw DomainError(.serviceUnavailable, "App transaction storage is not configured.",
                          underlying: "APIDependencies.appTransactions was not wired")
    }
}

/// Stands in when no customer store was wired: every call is "unavailable, retry", never a verdict.
struct UnconfiguredCustomerStore: CustomerStore {
    private static var unavailable: DomainError {
        DomainError(.serviceUnavailable, "Customer storage is not configured.",
                    underlying: "APIDependencies.customers was not wired")
    }

    func createGrant(_ grant: Grant, projectId: UUID) throws -> Grant { throw Self.unavailable }

    func revokeGrant(projectId: UUID, userId: String, grantId: UUID, now: Date) throws -> Grant? {
        throw Self.unavailable
    }

    func facts(projectId: UUID, userId: String) throws -> CustomerFacts { throw Self.unavailable }

    func erase(projectId: UUID, userId: String, now: Date) throws -> ErasureSummary { throw Self.unavailable }

    func transactionHolders(projectId: UUID, transactionId: String) throws -> TransactionHolders? {
        throw Self.unavailable
    }

    func purchaseHolders(projectId: UUID, environment: StoreEnvironment, originalTransactionIds: [String]) throws
        -> [String: [String]]
    {
        throw Self.unavailable
    }
}

/// Stands in when no credential store was wired: every call is "unavailable, retry", never a verdict.
struct UnconfiguredCredentialStore: AppStoreCredentialStore {
    private static var unavailable: DomainError {
        DomainError(.serviceUnavailable, "Credential storage is not configured.",
                    underlying: "APIDependencies.credentials was not wired")
    }

    func credentials(projectId: UUID) throws -> StoredAppStoreCredentials? { throw Self.unavailable }

    func setCredentials(projectId: UUID, _ credentials: StoredAppStoreCredentials) throws
        -> StoredAppStoreCredentials
    {
        throw Self.unavailable
    }

    func deleteCredentials(projectId: UUID) throws -> Bool { throw Self.unavailable }

    func allSealedPrivateKeys() throws -> [(projectId: UUID, sealed: SealedSecret)] { throw Self.unavailable }

    func replaceSealedPrivateKey(projectId: UUID, old: SealedSecret, new: SealedSecret) throws -> Bool {
        throw Self.unavailable
    }
}

/// Stands in when no key inspector was wired: no key can be checked, so none is accepted ("unavailable").
struct UnconfiguredKeyInspector: PrivateKeyInspecting {
    func inspect(pem: String) throws -> InspectedPrivateKey {
        throw DomainError(.serviceUnavailable, "Private key checking is not configured.",
                          underlying: "APIDependencies.keyInspector was not wired")
    }
}

/// Stands in when no operator-helper store was wired: every call is "unavailable, retry", never a verdict.
struct UnconfiguredAppStoreActionStore: AppStoreActionStore {
    private static var unavailable: DomainError {
        DomainError(.serviceUnavailable, "Operator helper storage is not configured.",
                    underlying: "APIDependencies.appStoreActions was not wired")
    }

    func notificationReceivedAt(projectId: UUID, environment: StoreEnvironment?, notificationUUID: UUID) throws -> Date? {
        throw Self.unavailable
    }
    func purchaseEnvironments(projectId: UUID, originalTransactionId: String) throws -> [StoreEnvironment] {
        throw Self.unavailable
    }
    func startRenewalExtension(_ record: RenewalExtensionRecord) throws { throw Self.unavailable }
    func completeRenewalExtension(_ record: RenewalExtensionRecord) throws { throw Self.unavailable }
    func recordTestNotificationRequest(projectId: UUID, environment: StoreEnvironment) throws { throw Self.unavailable }
    func recordAppAccountTokenSet(projectId: UUID, environment: StoreEnvironment, originalTransactionId: String,
                                  token: UUID) throws { throw Self.unavailable }
    func startMassRenewalExtension(_ record: MassRenewalExtensionRecord) throws { throw Self.unavailable }
    func completeMassRenewalExtension(_ record: MassRenewalExtensionRecord) throws { throw Self.unavailable }
    func updateMassRenewalExtensionStatus(_ record: MassRenewalExtensionRecord) throws { throw Self.unavailable }
    func massRenewalExtension(projectId: UUID, requestIdentifier: UUID) throws -> MassRenewalExtensionRecord? {
        throw Self.unavailable
    }
}

/// Stands in when no offer signer was wired: nothing is signed ("unavailable"), never a verdict.
struct UnconfiguredOfferSigner: PromotionalOfferSigning {
    private static var unavailable: DomainError {
        DomainError(.serviceUnavailable, "Offer signing is not configured.",
                    underlying: "APIDependencies.offerSigner was not wired")
    }

    func signLegacy(_ payload: String, with credentials: UnsealedAppStoreCredentials) throws -> [UInt8] {
        throw Self.unavailable
    }

    func signJWS(_ claims: PromotionalOfferClaims, with credentials: UnsealedAppStoreCredentials) throws -> String {
        throw Self.unavailable
    }

    func signEligibility(_ claims: IntroductoryOfferEligibilityClaims, with credentials: UnsealedAppStoreCredentials)
        throws -> String
    {
        throw Self.unavailable
    }
}

/// Stands in when no introductory-offer store was wired: no decision ("unavailable"), never a verdict.
struct UnconfiguredIntroductoryOfferStore: IntroductoryOfferFactsStore {
    func introductoryOfferFacts(projectId: UUID, userId: String, transactionId: String?, productId: String) throws
        -> IntroductoryOfferFacts
    {
        throw DomainError(.serviceUnavailable, "Introductory offer eligibility is not configured.",
                          underlying: "APIDependencies.introductoryOffers was not wired")
    }
}
