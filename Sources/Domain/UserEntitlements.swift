public import Foundation

/// A purchase bound to a user, with what its product grants.
public struct OwnedPurchase: Sendable, Equatable {
    /// The purchase's known state.
    public var purchase: PurchaseState
    /// Entitlements the purchase's product grants while active (from the project's product mapping).
    public var entitlements: [String]

    /// Creates a value.
    public init(purchase: PurchaseState, entitlements: [String]) {
        self.purchase = purchase
        self.entitlements = entitlements
    }
}

/// One purchase of a user, evaluated at an instant.
public struct EvaluatedPurchase: Sendable, Equatable {
    /// The purchase and its product's entitlements.
    public var owned: OwnedPurchase
    /// Its status at the instant.
    public var evaluation: PurchaseEvaluation
    /// Why it grants nothing whatever its status (`SandboxAccessRules.withheldReason`); `nil`: it grants as its
    /// status says.
    public var withheldReason: String? = nil

    /// Whether it gives its product's entitlements now.
    public var grants: Bool { evaluation.status == .active && withheldReason == nil }
}

/// A manual grant evaluated at an instant.
public struct EvaluatedGrant: Sendable, Equatable {
    /// The grant.
    public var grant: Grant
    /// Whether it gives its entitlement at the instant.
    public var active: Bool
}

/// The answer to "what is this user entitled to right now?".
public struct UserEntitlementSummary: Sendable, Equatable {
    /// `active` if any purchase is active; otherwise the status of the most recently ended one; `none` if none.
    public var status: EntitlementStatus
    /// The sorted, deduplicated union of the entitlements of active purchases.
    public var entitlements: [String]
    /// Every purchase of the user, active first, then most recent first.
    public var purchases: [EvaluatedPurchase]
    /// The user's app transactions with what each grants under `app_purchase_entitlements` (their entitlements
    /// are in `entitlements` too, and make `status` active).
    public var appPurchases: [AppPurchaseGrant] = []
    /// The latest consent withdrawal (RESCIND_CONSENT) recorded for any of the user's app transactions.
    public var consentRescindedAt: Date?
    /// The user's manual grants with whether each is active now (their active entitlements are in `entitlements`
    /// too, and make `status` active).
    public var grants: [EvaluatedGrant] = []

    /// Evaluates everything `userId` holds in `project` at `now`: purchases (Sandbox ones under the project's
    /// Sandbox access), and app transactions under its `app_purchase_entitlements`. What every reader that grants
    /// calls (`GET /v1/subscriptions`, entitlement tokens).
    public static func summarize(_ holdings: UserHoldings, for project: Project, userId: String, at now: Date)
        -> UserEntitlementSummary
    {
        // The common case (everyone's Sandbox purchases grant) asks nothing per purchase.
        guard project.sandbox.access == .allowlist else {
            return summarize(holdings, setting: project.appPurchaseEntitlements, at: now)
        }
        let policy = project.sandbox
        return summarize(holdings, setting: project.appPurchaseEntitlements, withholding: {
            SandboxAccessRules.withholds($0.environment, userId: userId, policy: policy)
        }, at: now)
    }

    /// Evaluates everything the user holds at `now`: purchases (those `withholding` names grant nothing), and app
    /// transactions under `setting`.
    public static func summarize(_ holdings: UserHoldings, setting: AppPurchaseEntitlements?,
                                 withholding: (PurchaseState) -> Bool = { _ in false }, at now: Date)
        -> UserEntitlementSummary
    {
        var summary = summarize(holdings.purchases, withholding: withholding, at: now)
        if !holdings.grants.isEmpty {
            summary.grants = holdings.grants.map { EvaluatedGrant(grant: $0, active: $0.isActive(at: now)) }
            let granted = summary.grants.filter(\.active).map(\.grant.entitlement)
            if !granted.isEmpty {
                summary.entitlements = Set(summary.entitlements + granted).sorted()
                summary.status = .active
            }
        }
        guard !holdings.appTransactions.isEmpty else { return summary }
        let grants = AppPurchaseRules.grants(holdings.appTransactions, setting: setting)
        summary.appPurchases = grants
        summary.consentRescindedAt = holdings.appTransactions.compactMap(\.consentRescindedAt).max()
        let granted = grants.flatMap(\.entitlements)
        if !granted.isEmpty {
            summary.entitlements = Set(summary.entitlements + granted).sorted()
            summary.status = .active
        }
        return summary
    }

    /// Evaluates all of a user's purchases at `now`. A withheld purchase is listed (with its reason) but counts for
    /// neither the user's status nor their entitlements: with only withheld purchases the status is `none`.
    public static func summarize(_ owned: [OwnedPurchase], withholding: (PurchaseState) -> Bool = { _ in false },
                                 at now: Date) -> UserEntitlementSummary {
        let evaluated = owned.map {
            EvaluatedPurchase(owned: $0, evaluation: StatusRules.evaluate($0.purchase, at: now),
                              withheldReason: withholding($0.purchase) ? SandboxAccessRules.withheldReason : nil)
        }
        let sorted = evaluated.sorted(by: displayOrder)
        let active = sorted.filter(\.grants)
        if !active.isEmpty {
            let entitlements = Set(active.flatMap(\.owned.entitlements)).sorted()
            return UserEntitlementSummary(status: .active, entitlements: entitlements, purchases: sorted)
        }
        let counted = sorted.filter { $0.withheldReason == nil }
        guard let latestEnded = counted.max(by: { endedAt($0) < endedAt($1) }) else {
            return UserEntitlementSummary(status: .none, entitlements: [], purchases: sorted)
        }
        return UserEntitlementSummary(status: latestEnded.evaluation.status, entitlements: [], purchases: sorted)
    }

    private static func endedAt(_ p: EvaluatedPurchase) -> Date {
        p.evaluation.accessEndsAt ?? p.owned.purchase.purchaseDate
    }

    private static func displayOrder(_ a: EvaluatedPurchase, _ b: EvaluatedPurchase) -> Bool {
        let aActive = a.evaluation.status == .active
        let bActive = b.evaluation.status == .active
        if aActive != bActive { return aActive }
        if a.owned.purchase.purchaseDate != b.owned.purchase.purchaseDate {
            return a.owned.purchase.purchaseDate > b.owned.purchase.purchaseDate
        }
        return a.owned.purchase.originalTransactionId < b.owned.purchase.originalTransactionId
    }
}
