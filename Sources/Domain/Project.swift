public import Foundation

/// A project's settings: what an admin gives when creating it (`NewProject`) and changes later (`ProjectChanges`),
/// with the documented defaults. `Project` and `NewProject` read and write them as their own members.
public struct ProjectSettings: Sendable, Equatable {
    /// Display name.
    public var name: String
    /// The app's bundle identifier; signed data for any other bundle is rejected.
    public var bundleId: String
    /// The app's Apple ID; when set, Production data must carry it.
    public var appAppleId: Int64?
    /// Environments whose data is accepted.
    public var environments: [StoreEnvironment]
    /// What happens when a purchase is restored on another account.
    public var transferPolicy: TransferPolicy
    /// Whether Xcode / LocalTesting data (not signed by Apple) is accepted, when Sandbox is also among
    /// `environments` (see `Project.accepts`); it is stored apart from Apple-signed purchases.
    public var allowXcode: Bool
    /// Whether reading subscriptions requires the secret key (public keys ship inside apps).
    public var requireSecretKeyForReads: Bool
    /// Whether a transaction's `appAccountToken` decides which user a posted purchase binds to.
    public var appAccountTokenPolicy: AppAccountTokenPolicy
    /// Entitlements for customers who first got the app before a version (`app_purchase_entitlements`).
    public var appPurchaseEntitlements: AppPurchaseEntitlements?
    /// Whether entitlement tokens (signed JWTs of the user's entitlements) are issued for this project.
    public var entitlementTokens: Bool = false
    /// The longest lifetime of an entitlement token (`EntitlementTokenRules.ttlSeconds`).
    public var entitlementTokenTTLSeconds: Int = EntitlementTokenRules.defaultTTLSeconds
    /// How Bouncer answers Apple's CONSUMPTION_REQUEST notifications (refund defense; default: off).
    public var consumption: ConsumptionSettings = ConsumptionSettings()
    /// Whose Sandbox purchases grant anything (`sandbox_access`, `sandbox_allowed_user_ids`; default: everyone's).
    public var sandbox: SandboxAccessPolicy = .all
    /// Whether consumables and non-consumables are reported finished to Apple once recorded (server-managed
    /// delivery, `finish_transactions`; default: off).
    public var finishTransactions: Bool = false

    /// Creates the settings with the documented defaults.
    public init(
        name: String, bundleId: String, appAppleId: Int64? = nil,
        environments: [StoreEnvironment] = [.production, .sandbox], transferPolicy: TransferPolicy = .transfer,
        allowXcode: Bool = false, requireSecretKeyForReads: Bool = false,
        appAccountTokenPolicy: AppAccountTokenPolicy = .ignore, appPurchaseEntitlements: AppPurchaseEntitlements? = nil
    ) {
        self.name = name
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environments = environments
        self.transferPolicy = transferPolicy
        self.allowXcode = allowXcode
        self.requireSecretKeyForReads = requireSecretKeyForReads
        self.appAccountTokenPolicy = appAccountTokenPolicy
        self.appPurchaseEntitlements = appPurchaseEntitlements
    }
}

/// A tenant: one app, its keys and its rules. Its settings read and write as its own members (`project.bundleId`).
@dynamicMemberLookup
public struct Project: Sendable, Equatable {
    /// Stable identifier.
    public var id: UUID
    /// The account that owns the project (`Account`).
    public var accountId: UUID
    /// The project's settings.
    public var settings: ProjectSettings
    /// The current public key (`pk_…`), safe to embed in apps; retiring keys are in the store's key list.
    public var publicKey: String
    /// When the project was created.
    public var createdAt: Date
    /// When the project last changed.
    public var updatedAt: Date

    /// Creates a project value.
    public init(id: UUID, settings: ProjectSettings, publicKey: String, createdAt: Date, updatedAt: Date,
                accountId: UUID = Account.defaultId) {
        self.id = id
        self.accountId = accountId
        self.settings = settings
        self.publicKey = publicKey
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Creates a project value with the settings' documented defaults where not given.
    public init(
        id: UUID, name: String, bundleId: String, appAppleId: Int64? = nil,
        environments: [StoreEnvironment] = [.production, .sandbox], transferPolicy: TransferPolicy = .transfer,
        allowXcode: Bool = false, requireSecretKeyForReads: Bool = false,
        appAccountTokenPolicy: AppAccountTokenPolicy = .ignore, appPurchaseEntitlements: AppPurchaseEntitlements? = nil,
        publicKey: String, createdAt: Date, updatedAt: Date, accountId: UUID = Account.defaultId
    ) {
        self.init(id: id, settings: ProjectSettings(
                      name: name, bundleId: bundleId, appAppleId: appAppleId, environments: environments,
                      transferPolicy: transferPolicy, allowXcode: allowXcode,
                      requireSecretKeyForReads: requireSecretKeyForReads, appAccountTokenPolicy: appAccountTokenPolicy,
                      appPurchaseEntitlements: appPurchaseEntitlements),
                  publicKey: publicKey, createdAt: createdAt, updatedAt: updatedAt, accountId: accountId)
    }

    /// A setting, as a member of the project.
    @inlinable
    public subscript<Value>(dynamicMember setting: WritableKeyPath<ProjectSettings, Value>) -> Value {
        get { settings[keyPath: setting] }
        set { settings[keyPath: setting] = newValue }
    }

    /// Whether data from `environment` is accepted for this project (`StoreEnvironment.isAccepted`). StoreKit
    /// testing data, when accepted, is stored as its own purchases and never changes a Sandbox or Production one.
    public func accepts(_ environment: StoreEnvironment) -> Bool {
        environment.isAccepted(in: settings.environments, allowXcode: settings.allowXcode)
    }
}

/// The settings an admin gives when creating a project, and the account it goes to. Its settings read and write
/// as its own members (`new.bundleId`).
@dynamicMemberLookup
public struct NewProject: Sendable, Equatable {
    /// The project's settings.
    public var settings: ProjectSettings
    /// The owning account; `nil`: the server's only account (the store refuses when there are several).
    public var accountId: UUID?

    /// New settings, for the server's only account unless `accountId` says otherwise.
    public init(_ settings: ProjectSettings, accountId: UUID? = nil) {
        self.settings = settings
        self.accountId = accountId
    }

    /// A setting, as a member of the new project.
    @inlinable
    public subscript<Value>(dynamicMember setting: WritableKeyPath<ProjectSettings, Value>) -> Value {
        get { settings[keyPath: setting] }
        set { settings[keyPath: setting] = newValue }
    }
}

/// A partial update of a project's settings; `nil` leaves a field as it is.
public struct ProjectChanges: Sendable, Equatable {
    /// New display name.
    public var name: String?
    /// New bundle identifier.
    public var bundleId: String?
    /// New app Apple ID: `.some(nil)` clears it.
    public var appAppleId: Int64??
    /// New accepted environments.
    public var environments: [StoreEnvironment]?
    /// New transfer policy.
    public var transferPolicy: TransferPolicy?
    /// New Xcode setting.
    public var allowXcode: Bool?
    /// New secret-key-for-reads setting.
    public var requireSecretKeyForReads: Bool?
    /// New app-account-token policy.
    public var appAccountTokenPolicy: AppAccountTokenPolicy?
    /// New refund defense settings (each `nil` field is left as it is).
    public var consumption = ConsumptionSettings.Changes()
    /// New `app_purchase_entitlements`: `.some(nil)` clears it.
    public var appPurchaseEntitlements: AppPurchaseEntitlements??
    /// New `entitlement_tokens`.
    public var entitlementTokens: Bool?
    /// New `entitlement_token_ttl_seconds`.
    public var entitlementTokenTTLSeconds: Int?
    /// New `sandbox_access`.
    public var sandboxAccess: SandboxAccess?
    /// New `sandbox_allowed_user_ids`.
    public var sandboxAllowedUserIds: [String]?
    /// New `finish_transactions`.
    public var finishTransactions: Bool?

    /// An empty change set.
    public init() {}

    /// Applies the changes to `project`'s settings.
    public func applied(to project: Project) -> Project {
        var p = project
        p.settings = applied(to: project.settings)
        return p
    }

    /// Applies the changes to `settings`: the one place a change meets a setting (a project's update, and a new
    /// project's settings over the defaults).
    public func applied(to settings: ProjectSettings) -> ProjectSettings {
        var p = settings
        if let name { p.name = name }
        if let bundleId { p.bundleId = bundleId }
        if let appAppleId { p.appAppleId = appAppleId }
        if let environments { p.environments = environments }
        if let transferPolicy { p.transferPolicy = transferPolicy }
        if let allowXcode { p.allowXcode = allowXcode }
        if let requireSecretKeyForReads { p.requireSecretKeyForReads = requireSecretKeyForReads }
        if let appAccountTokenPolicy { p.appAccountTokenPolicy = appAccountTokenPolicy }
        p.consumption = consumption.applied(to: p.consumption)
        if let appPurchaseEntitlements { p.appPurchaseEntitlements = appPurchaseEntitlements }
        if let entitlementTokens { p.entitlementTokens = entitlementTokens }
        if let entitlementTokenTTLSeconds { p.entitlementTokenTTLSeconds = entitlementTokenTTLSeconds }
        if let finishTransactions { p.finishTransactions = finishTransactions }
        if sandboxAccess != nil || sandboxAllowedUserIds != nil {
            p.sandbox = SandboxAccessPolicy(access: sandboxAccess ?? p.sandbox.access,
                                            allowedUserIds: sandboxAllowedUserIds ?? p.sandbox.allowedUserIds)
        }
        return p
    }
}

/// A product of a project and the entitlements it grants.
public struct ProductMapping: Sendable, Equatable {
    /// The App Store product identifier.
    public var productId: String
    /// Entitlement identifiers granted while a purchase of the product is active (sorted, unique).
    public var entitlements: [String]

    /// Creates a mapping; entitlements are deduplicated and sorted.
    public init(productId: String, entitlements: [String]) {
        self.productId = productId
        self.entitlements = Array(Set(entitlements)).sorted()
    }
}
