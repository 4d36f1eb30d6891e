public import Foundation
import Primitives

/// An answer derived from a user's holdings (`GET /v1/subscriptions`'s body bytes), kept with the `UserHoldings` it
/// was derived from so a read cache's hit can send it again without summarizing and encoding the same facts.
///
/// An answer is reused only when everything `UserEntitlementSummary.summarize(_:for:userId:at:)` reads is equal:
/// the holdings (compared by value: a copy that was changed after the answer was kept does not match), the user id,
/// the project's Sandbox access and app-purchase setting, and what the clock decides now — each purchase's
/// evaluation (`StatusRules.evaluate`) and each grant's `isActive`. Equal inputs give an equal summary, and the
/// answer is a function of the summary, so a reused answer is byte for byte the one computed afresh. A purchase that
/// expires, a grace period that ends, a grant that lapses changes an evaluation, and the next read computes anew.
public final class SummaryMemo: Sendable {
    /// One kept answer with what it was derived from.
    struct Kept: Sendable {
        let holdings: (purchases: [OwnedPurchase], appTransactions: [StoredAppTransaction], grants: [Grant])
        let userId: String
        let sandbox: SandboxAccessPolicy
        let appPurchaseEntitlements: AppPurchaseEntitlements?
        let evaluations: [PurchaseEvaluation]
        let grantsActive: [Bool]
        let answer: [UInt8]
    }

    private let kept = Locked<Kept?>(nil)

    /// An empty memo.
    public init() {}

    /// The answer kept for `holdings` read for `userId` in `project`, if it is still the answer at `now`.
    public func answer(_ holdings: UserHoldings, for project: Project, userId: String, at now: Date) -> [UInt8]? {
        guard let kept = kept.withLock({ $0 }),
              kept.userId == userId, kept.sandbox == project.sandbox,
              kept.appPurchaseEntitlements == project.appPurchaseEntitlements,
              kept.holdings.purchases == holdings.purchases, kept.holdings.grants == holdings.grants,
              kept.holdings.appTransactions == holdings.appTransactions,
              kept.evaluations.count == holdings.purchases.count, kept.grantsActive.count == holdings.grants.count
        else { return nil }
        for (evaluation, owned) in zip(kept.evaluations, holdings.purchases)
        where StatusRules.evaluate(owned.purchase, at: now) != evaluation {
            return nil
        }
        for (active, grant) in zip(kept.grantsActive, holdings.grants) where grant.isActive(at: now) != active {
            return nil
        }
        return kept.answer
    }

    /// Keeps `answer`, derived from `holdings` read for `userId` in `project` at `now` (replacing what was kept).
    public func keep(_ answer: [UInt8], _ holdings: UserHoldings, for project: Project, userId: String, at now: Date) {
        let entry = Kept(
            holdings: (holdings.purchases, holdings.appTransactions, holdings.grants), userId: userId,
            sandbox: project.sandbox, appPurchaseEntitlements: project.appPurchaseEntitlements,
            evaluations: holdings.purchases.map { StatusRules.evaluate($0.purchase, at: now) },
            grantsActive: holdings.grants.map { $0.isActive(at: now) }, answer: answer)
        kept.withLock { $0 = entry }
    }
}
