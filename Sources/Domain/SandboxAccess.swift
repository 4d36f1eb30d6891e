/// Who may be granted anything by Sandbox purchases (TestFlight testers, App Review): the project setting
/// `sandbox_access`.
public enum SandboxAccess: String, Sendable, CaseIterable {
    /// Every user's Sandbox purchases grant their entitlements (the default).
    case all
    /// Only the users of `sandbox_allowed_user_ids`: other users' Sandbox purchases are stored (facts) but grant
    /// nothing.
    case allowlist
}

/// A project's Sandbox access: the setting and its allowlist.
public struct SandboxAccessPolicy: Sendable, Equatable {
    /// `sandbox_access`.
    public var access: SandboxAccess
    /// `sandbox_allowed_user_ids`, sorted and unique (kept when `access` is `all`, used only with `allowlist`).
    public var allowedUserIds: [String]

    /// Everyone: the default.
    public static let all = SandboxAccessPolicy(access: .all, allowedUserIds: [])

    /// Creates a value; the ids are sorted and deduplicated.
    public init(access: SandboxAccess, allowedUserIds: [String]) {
        self.access = access
        self.allowedUserIds = Array(Set(allowedUserIds)).sorted()
    }
}

/// The one rule of Sandbox access, used by every reader that grants (`UserEntitlementSummary`, the customer
/// timeline, entitlement tokens through the summary). Pure.
public enum SandboxAccessRules {
    /// Why a purchase grants nothing, as the API and the timeline name it.
    public static let withheldReason = "sandbox_user_not_allowed"
    /// At most this many allowlisted users per project (a list of testers, not a user table).
    public static let maxAllowedUserIds = 1_000

    /// Whether `userId`'s purchase from `environment` is withheld under `policy`: only Sandbox purchases, only under
    /// `allowlist`, only for users not on the list. Production, Xcode and LocalTesting are never withheld here
    /// (Xcode data has its own switch, `allow_xcode`).
    public static func withholds(_ environment: StoreEnvironment, userId: String, policy: SandboxAccessPolicy) -> Bool {
        guard policy.access == .allowlist, environment == .sandbox else { return false }
        return !policy.allowedUserIds.contains(userId)
    }

    /// `recorded` as a receipt's answer shows it to `userId` (nil: no user bound, so on no allowlist): its
    /// entitlements are cleared when withheld (the facts stay as recorded).
    public static func answer(_ recorded: RecordedTransaction, userId: String?, policy: SandboxAccessPolicy)
        -> RecordedTransaction
    {
        // No user: "" is on no allowlist (user ids have at least one character).
        guard withholds(recorded.transaction.environment, userId: userId ?? "", policy: policy) else { return recorded }
        var shown = recorded
        shown.entitlements = []
        return shown
    }

    /// Every rule `ids` break (`sandbox_allowed_user_ids` in a project body).
    public static func problems(allowedUserIds ids: [String]) -> [FieldProblem] {
        var out: [FieldProblem] = []
        if ids.count > maxAllowedUserIds {
            out.append(FieldProblem(path: ["sandbox_allowed_user_ids"],
                                    message: "Array must contain at most \(maxAllowedUserIds) element(s)"))
        }
        for (index, id) in ids.enumerated() {
            for problem in GrantRules.problems(userId: id) {
                out.append(FieldProblem(path: ["sandbox_allowed_user_ids", String(index)], message: problem.message))
            }
        }
        return out
    }
}
