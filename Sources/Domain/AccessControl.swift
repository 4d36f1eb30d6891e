public import Foundation

/// One thing an admin caller may do. Every admin route declares the one it needs (`APIRoute`, Sources/API); a role
/// is a set of them (`Role.permissions`, the one table).
public enum Permission: String, Sendable, CaseIterable, Comparable {
    /// See projects, their settings (no secrets), products, credentials' metadata, webhooks and deliveries.
    case projectsRead = "projects.read"
    /// Create, change, reconcile and delete projects.
    case projectsWrite = "projects.write"
    /// Map products to entitlements.
    case productsWrite = "products.write"
    /// Rotate a project's public and secret keys (a new secret key is shown).
    case keysManage = "keys.manage"
    /// Store, replace and delete App Store credentials; ask Apple for a test notification.
    case credentialsManage = "credentials.manage"
    /// Configure webhooks, rotate their secrets, send tests and retry deliveries.
    case webhooksManage = "webhooks.manage"
    /// Look customers up: timelines, transactions, notifications.
    case customersRead = "customers.read"
    /// Change what customers have: grants, renewal-date extensions.
    case customersWrite = "customers.write"
    /// Export everything stored about a customer.
    case customersExport = "customers.export"
    /// Erase a customer.
    case customersErase = "customers.erase"
    /// Revenue figures: the dashboard's overview and the charts.
    case revenueRead = "revenue.read"
    /// Invite, change and remove an account's members (the next wave's routes).
    case membersManage = "members.manage"
    /// Create, list and revoke an account's API keys (never one that may do more than its creator).
    case apiKeysManage = "api_keys.manage"
    /// Read the account's audit log (the next wave's route).
    case auditRead = "audit.read"
    /// Read the account's usage (the next wave's route).
    case usageRead = "usage.read"
    /// Create, change and delete accounts: the operator only.
    case accountsManage = "accounts.manage"
    /// End every console session on the server: the operator only.
    case sessionsManage = "sessions.manage"
    /// Publish the exchange rates every project's charts convert with: the operator only.
    case exchangeRatesManage = "exchange_rates.manage"

    /// What only the operator may do: no role grants these.
    public static let operatorOnly: Set<Permission> = [.accountsManage, .sessionsManage, .exchangeRatesManage]

    public static func < (a: Permission, b: Permission) -> Bool { a.rawValue < b.rawValue }
}

/// What a member or an API key of an account may do. `permissions` is the one table of what each role may do.
public enum Role: String, Sendable, CaseIterable {
    /// Everything in the account.
    case owner
    /// Everything in the account (owners will keep what only owners may do once members arrive: their own removal).
    case admin
    /// Everything but revenue figures and members.
    case developer
    /// Read-only, no secrets.
    case viewer
    /// Customers: look up, timeline, grants, export; no settings, keys or revenue.
    case support

    /// The one table: what each role may do. The README prints it (`AccessControlTests` compares both).
    public var permissions: Set<Permission> {
        let everything = Set(Permission.allCases).subtracting(Permission.operatorOnly)
        switch self {
        case .owner, .admin:
            return everything
        case .developer:
            return everything.subtracting([.revenueRead, .membersManage])
        case .viewer:
            return [.projectsRead, .customersRead, .revenueRead, .auditRead, .usageRead]
        case .support:
            return [.projectsRead, .customersRead, .customersWrite, .customersExport]
        }
    }

    /// Whether this role may do everything `other` may (a key may create keys of such roles only).
    public func includes(_ other: Role) -> Bool { other.permissions.isSubset(of: permissions) }
}

/// Who is asking: the actor of an admin request, resolved once by the admin authentication and passed to what it
/// calls (and, next, written into the audit log as `{type, id, label}`).
public enum Principal: Sendable, Equatable {
    /// `BOUNCER_ADMIN_TOKEN` or its console session: the superuser, across every account.
    case `operator`
    /// A person of an account, signed in (the next wave adds their sign-in).
    case member(id: UUID, accountId: UUID, role: Role)
    /// An API key (`bk_…`) of an account; `projectIds` nil: every project of the account.
    case apiKey(id: UUID, accountId: UUID, role: Role, projectIds: [UUID]?)

    /// The account the principal acts for; nil for the operator (every account).
    public var accountId: UUID? {
        switch self {
        case .operator: return nil
        case .member(_, let accountId, _), .apiKey(_, let accountId, _, _): return accountId
        }
    }

    /// The principal's role; nil for the operator (no role limits it).
    public var role: Role? {
        switch self {
        case .operator: return nil
        case .member(_, _, let role), .apiKey(_, _, let role, _): return role
        }
    }

    /// `operator`, `member` or `api_key`: the audit log's `actor.type`.
    public var kind: String {
        switch self {
        case .operator: return "operator"
        case .member: return "member"
        case .apiKey: return "api_key"
        }
    }

    /// How the audit log names the actor: `operator`, `member:<id>`, `api_key:<id>`.
    public var label: String {
        switch self {
        case .operator: return "operator"
        case .member(let id, _, _): return "member:" + id.lowercasedText
        case .apiKey(let id, _, _, _): return "api_key:" + id.lowercasedText
        }
    }

    /// Whether the principal may do `permission` (the operator may do everything).
    public func may(_ permission: Permission) -> Bool {
        guard let role else { return true }
        return role.permissions.contains(permission)
    }

    /// Whether the principal is the member whose id `text` spells (a UUID; case-insensitive).
    public func isMember(_ text: String?) -> Bool {
        guard case .member(let id, _, _) = self, let text, let asked = UUID(uuidString: text) else { return false }
        return asked == id
    }

    /// Whether the principal may see the account `accountId` at all.
    public func reaches(account accountId: UUID) -> Bool {
        guard let own = self.accountId else { return true }
        return own == accountId
    }

    /// Whether the principal may see project `projectId` of account `accountId`: its account, and, for a key
    /// limited to some projects, one of them.
    public func reaches(project projectId: UUID, ofAccount accountId: UUID) -> Bool {
        guard reaches(account: accountId) else { return false }
        if case .apiKey(_, _, _, let projectIds?) = self { return projectIds.contains(projectId) }
        return true
    }

    /// Whether the principal reaches every project of its account (not a key limited to some).
    public var reachesWholeAccount: Bool {
        if case .apiKey(_, _, _, .some) = self { return false }
        return true
    }

    /// 403 `PERMISSION_DENIED` naming `permission`, unless the principal may do it.
    public func require(_ permission: Permission) throws {
        guard may(permission) else { throw DomainError.permissionDenied(permission) }
    }
}

extension DomainError {
    /// The principal's role lacks `permission` (rendered 403 `PERMISSION_DENIED` with `details` naming it).
    public static func permissionDenied(_ permission: Permission) -> DomainError {
        DomainError(.permissionDenied, "This credential may not do this: it lacks \(permission.rawValue).",
                    details: [FieldProblem(path: ["permission"], message: permission.rawValue)])
    }
}
