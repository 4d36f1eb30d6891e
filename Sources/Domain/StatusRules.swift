public import Foundation

/// The status of a purchase at an instant, with the detail behind it.
public struct PurchaseEvaluation: Sendable, Equatable {
    /// The public answer: `active`, `expired` or `revoked` (never `none` for a known purchase).
    public var status: EntitlementStatus
    /// Active only because Apple's billing grace period is running.
    public var inGracePeriod = false
    /// Apple is retrying a failed renewal charge.
    public var inBillingRetry = false
    /// Whether the subscription will renew (always `false` for other product types).
    public var autoRenewEnabled = false
    /// When access ends (or ended) if nothing else happens: the later of the period's end and a billing grace
    /// period's end; the revocation for a revoked purchase; `nil` for lifetime.
    public var accessEndsAt: Date? = nil
}

/// Entitlement status rules. Pure functions of stored facts and `now`; nothing here reads a clock.
public enum StatusRules {
    /// The status of a single transaction taken alone (the receipts API's answer for the posted transaction).
    ///
    /// `revoked` if a revocation date is set; `active` if there is no expiration date (lifetime, consumable) or it
    /// is after `now`; `expired` otherwise.
    public static func evaluate(_ transaction: TransactionFacts, at now: Date) -> EntitlementStatus {
        evaluate(StoredTransactionFacts(transaction), at: now)
    }

    /// The status of one transaction from its stored facts, by the same rule.
    public static func evaluate(_ stored: StoredTransactionFacts, at now: Date) -> EntitlementStatus {
        if stored.accessRevocationDate != nil { return .revoked }
        guard let expires = stored.expiresDate else { return .active }
        return expires > now ? .active : .expired
    }

    /// The status of a purchase from its latest transaction and renewal info.
    ///
    /// - revoked when the latest transaction carries a revocation date (REFUND, REVOKE, upgrade revocations);
    /// - active while the period runs, or with no expiration date;
    /// - active during a billing grace period, until `gracePeriodExpiresDate`;
    /// - expired after that, and during billing retry without grace.
    /// A REFUND_REVERSED, DID_RENEW or RENEWAL_EXTENDED delivers a newer transaction fact, which this re-reads.
    public static func evaluate(_ purchase: PurchaseState, at now: Date) -> PurchaseEvaluation {
        let renewal = purchase.renewal
        let autoRenew: Bool
        if purchase.type == .autoRenewable {
            // Until renewal info says otherwise, an auto-renewable subscription is assumed to renew.
            autoRenew = renewal?.autoRenewStatus.map { $0 == 1 } ?? true
        } else {
            autoRenew = false
        }
        let retrying = purchase.type == .autoRenewable && (renewal?.isInBillingRetryPeriod ?? false)

        if purchase.revocationDate != nil {
            return PurchaseEvaluation(
                status: .revoked, autoRenewEnabled: false, accessEndsAt: purchase.revocationDate)
        }
        guard let expires = purchase.expiresDate else {
            return PurchaseEvaluation(status: .active, autoRenewEnabled: autoRenew, accessEndsAt: nil)
        }
        // When access ends if nothing else happens: the period's end, or a later grace period's end. The same instant
        // as SQL's bouncer_purchase_access_end (webhooks), which RuleTableTests checks.
        let graceEnd = purchase.type == .autoRenewable ? renewal?.gracePeriodExpiresDate : nil
        let accessEnd = max(expires, graceEnd ?? expires)
        if expires > now {
            return PurchaseEvaluation(
                status: .active, inBillingRetry: false, autoRenewEnabled: autoRenew, accessEndsAt: accessEnd)
        }
        if accessEnd > now {
            return PurchaseEvaluation(
                status: .active, inGracePeriod: true, inBillingRetry: retrying, autoRenewEnabled: autoRenew,
                accessEndsAt: accessEnd)
        }
        return PurchaseEvaluation(
            status: .expired, inBillingRetry: retrying, autoRenewEnabled: autoRenew, accessEndsAt: accessEnd)
    }
}
