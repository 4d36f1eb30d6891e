public import Foundation
import Primitives

/// Why an entitlement is or is not active for a user now, in one sentence.
public struct EntitlementExplanation: Sendable, Equatable {
    /// The entitlement.
    public var id: String
    /// Whether the user has it now.
    public var active: Bool
    /// The sentence.
    public var reason: String
}

/// One thing that touched the user: a purchase, renewal, refund, notification, reconciliation, binding, transfer,
/// grant or app transaction.
public struct TimelineEvent: Sendable, Equatable {
    /// When it happened.
    public var at: Date
    /// Where the fact came from: `receipt`, `lookup`, `notification`, `reconcile`, `transaction` (a transaction
    /// stored before sources were recorded), `ownership`, `admin`, `app_transaction`, `retention`.
    public var source: String
    /// What happened: `purchase`, `renewal`, `refund`, `partial_refund`, `revocation`, `expiration`,
    /// `notification`, `reconcile`, `binding`, `transfer_out`, `transfer_in`, `grant`, `grant_removed`,
    /// `grant_expired`, `app_purchase`, `retention_decision`.
    public var type: String
    /// The transaction (or app transaction) it is about, if any.
    public var transactionId: String?
    /// What happened, for people.
    public var summary: String
    /// What it did to the user's entitlements, for people.
    public var effect: String
}

/// A user's history and the explanation of each entitlement: the support tool's answer.
public struct CustomerTimeline: Sendable, Equatable {
    /// The user.
    public var userId: String
    /// Every entitlement the user's history names, sorted by id.
    public var entitlements: [EntitlementExplanation]
    /// Oldest first.
    public var events: [TimelineEvent]

    /// The timeline of `facts` at `now`; `setting` is the project's `app_purchase_entitlements`, `sandbox` its
    /// Sandbox access. Pure.
    public static func build(_ facts: CustomerFacts, setting: AppPurchaseEntitlements?,
                             sandbox: SandboxAccessPolicy = .all, at now: Date) -> CustomerTimeline
    {
        CustomerTimeline(userId: facts.userId,
                         entitlements: TimelineRules.explanations(facts, setting: setting, sandbox: sandbox, at: now),
                         events: TimelineRules.events(facts, setting: setting, sandbox: sandbox, at: now))
    }
}

/// The rules that explain a user's entitlements and narrate their history: pure functions of `CustomerFacts`
/// and `now`, tested as tables (`TimelineRulesTests`).
public enum TimelineRules {
    /// A way the user could hold an entitlement: active until an instant (nil: no end), or ended at one.
    struct Candidate {
        var active: Bool
        /// For active candidates, when access ends (nil: never); for ended ones, when it ended.
        var instant: Date?
        var reason: String
    }

    /// One sentence per entitlement: the active source that lasts longest, else the one that ended last.
    public static func explanations(_ facts: CustomerFacts, setting: AppPurchaseEntitlements?,
                                    sandbox: SandboxAccessPolicy = .all, at now: Date) -> [EntitlementExplanation]
    {
        var candidates: [String: [Candidate]] = [:]
        for held in facts.purchases {
            var candidate = purchaseCandidate(held, facts: facts, at: now)
            if held.revokedAt == nil,
               SandboxAccessRules.withholds(held.purchase.environment, userId: facts.userId, policy: sandbox) {
                candidate = Candidate(active: false, instant: held.purchase.purchaseDate,
                                      reason: "Not granted: transaction \(held.purchase.latestTransactionId) "
                                        + "(\(held.purchase.productId)) is a Sandbox purchase, and this user is not in "
                                        + "the project's sandbox_allowed_user_ids (sandbox_access: allowlist).")
            }
            for entitlement in held.entitlements { candidates[entitlement, default: []].append(candidate) }
        }
        for grant in facts.grants {
            candidates[grant.entitlement, default: []].append(grantCandidate(grant, at: now))
        }
        for record in facts.appTransactions {
            let app = record.appTransaction
            let granted = AppPurchaseRules.entitlements(for: app, setting: setting)
            guard !granted.isEmpty, let setting else { continue }
            let candidate = Candidate(
                active: true, instant: nil,
                reason: "Granted by app transaction \(app.appTransactionId) (first installed at version "
                    + "\(app.originalApplicationVersion ?? "?"), before \(setting.purchasedBeforeVersion)).")
            for entitlement in granted { candidates[entitlement, default: []].append(candidate) }
        }
        return candidates.keys.sorted().map { id in
            let options = candidates[id] ?? []
            let active = options.filter(\.active)
            if let best = active.max(by: { lastsLonger($1, than: $0) }) {
                return EntitlementExplanation(id: id, active: true, reason: best.reason)
            }
            let latest = options.max { ($0.instant ?? .distantPast) < ($1.instant ?? .distantPast) }
            return EntitlementExplanation(id: id, active: false, reason: latest?.reason ?? "Not active.")
        }
    }

    /// Whether `a` ends later than `b` (no end is the latest).
    private static func lastsLonger(_ a: Candidate, than b: Candidate) -> Bool {
        switch (a.instant, b.instant) {
        case (nil, nil): return false
        case (nil, _): return true
        case (_, nil): return false
        case (let x?, let y?): return x > y
        }
    }

    static func purchaseCandidate(_ held: HeldPurchase, facts: CustomerFacts, at now: Date) -> Candidate {
        let p = held.purchase
        if let lostAt = held.revokedAt {
            let move = facts.ownershipEvents
                .filter { $0.originalTransactionId == p.originalTransactionId && $0.fromUserId == facts.userId }
                .max { $0.at < $1.at }
            let to = move?.toUserId.map { "user \($0)" } ?? "another user"
            let policy = move?.policy ?? "transfer"
            return Candidate(active: false, instant: lostAt,
                             reason: "Not active: the purchase moved to \(to) on \(text(lostAt)) (\(policy) policy).")
        }
        let evaluation = StatusRules.evaluate(p, at: now)
        let product = "\(p.latestTransactionId) (\(p.productId))"
        switch evaluation.status {
        case .active:
            if evaluation.inGracePeriod, let end = evaluation.accessEndsAt {
                return Candidate(active: true, instant: end,
                                 reason: "Granted by transaction \(product) in the billing grace period until \(text(end)).")
            }
            if let end = evaluation.accessEndsAt {
                return Candidate(active: true, instant: end, reason: "Granted by transaction \(product) until \(text(end)).")
            }
            return Candidate(active: true, instant: nil, reason: "Granted by transaction \(product) with no expiry.")
        case .revoked:
            let at = p.revocationDate ?? p.purchaseDate
            if p.revocationType == .familyRevoke {
                return Candidate(active: false, instant: at,
                                 reason: "Not active: Family Sharing access through transaction \(p.latestTransactionId) "
                                    + "was revoked on \(text(at)).")
            }
            if RevocationKind(reason: p.revocationReason, type: p.revocationType) == .revoked {
                return Candidate(active: false, instant: at,
                                 reason: "Not active: Apple revoked transaction \(p.latestTransactionId) without a refund "
                                    + "(e.g. an upgrade to another product) on \(text(at)).")
            }
            return Candidate(active: false, instant: at,
                             reason: "Not active: transaction \(p.latestTransactionId) was refunded on \(text(at)).")
        default:
            let end = evaluation.accessEndsAt ?? p.expiresDate ?? p.purchaseDate
            let retry = evaluation.inBillingRetry ? " Apple is retrying the payment (billing retry)." : ""
            return Candidate(active: false, instant: end,
                             reason: "Not active: transaction \(product) expired on \(text(end)).\(retry)")
        }
    }

    static func grantCandidate(_ grant: Grant, at now: Date) -> Candidate {
        if let removed = grant.revokedAt {
            return Candidate(active: false, instant: removed,
                             reason: "Not active: the manual grant was removed on \(text(removed)) (reason: \(grant.reason)).")
        }
        if let end = grant.expiresAt {
            if now < end {
                return Candidate(active: true, instant: end,
                                 reason: "Granted manually by an admin until \(text(end)) (reason: \(grant.reason)).")
            }
            return Candidate(active: false, instant: end,
                             reason: "Not active: the manual grant expired on \(text(end)) (reason: \(grant.reason)).")
        }
        return Candidate(active: true, instant: nil,
                         reason: "Granted manually by an admin with no expiry (reason: \(grant.reason)).")
    }

    // MARK: - Events

    /// Every event, oldest first (ties keep the order facts are listed in).
    public static func events(_ facts: CustomerFacts, setting: AppPurchaseEntitlements?,
                              sandbox: SandboxAccessPolicy = .all, at now: Date) -> [TimelineEvent]
    {
        var out: [TimelineEvent] = []
        let withheld = "No entitlement: a Sandbox purchase, and this user is not in the project's "
            + "sandbox_allowed_user_ids (sandbox_access: allowlist)."
        func withholds(_ environment: StoreEnvironment) -> Bool {
            SandboxAccessRules.withholds(environment, userId: facts.userId, policy: sandbox)
        }
        func granted(_ product: String) -> [String] { facts.productEntitlements[product] ?? [] }
        func names(_ entitlements: [String]) -> String { entitlements.joined(separator: ", ") }

        for held in facts.purchases {
            let device = held.deviceId.map { " (device \($0))" } ?? ""
            let entitlements = held.entitlements
            out.append(TimelineEvent(
                at: held.boundAt, source: "ownership", type: "binding",
                transactionId: held.purchase.originalTransactionId,
                summary: "Purchase \(held.purchase.originalTransactionId) bound to this user\(device).",
                effect: entitlements.isEmpty ? "No entitlement (the product is not mapped)."
                    : withholds(held.purchase.environment) ? withheld
                    : "Gives \(names(entitlements)) while the purchase is active."))
        }

        // The latest transaction of each purchase: the one whose expiry ends the purchase.
        let latest = Set(facts.purchases.map { $0.purchase.latestTransactionId })
        for t in facts.transactions {
            let source = t.source ?? "transaction"
            let entitlements = granted(t.productId)
            let isFirst = t.transactionId == t.originalTransactionId
            let until = t.expiresDate.map { " until \(text($0))" } ?? " with no expiry"
            out.append(TimelineEvent(
                at: t.purchaseDate, source: source, type: isFirst ? "purchase" : "renewal", transactionId: t.transactionId,
                summary: isFirst ? "Purchased \(t.productId) (transaction \(t.transactionId))."
                    : "Renewed \(t.productId) (transaction \(t.transactionId)).",
                effect: entitlements.isEmpty ? "No entitlement (the product is not mapped)."
                    : withholds(t.environment) ? withheld : "Gives \(names(entitlements))\(until)."))
            if let revoked = t.revocationDate {
                let (type, summary, effect): (String, String, String)
                switch t.revocationType {
                case RevocationType.refundProrated?:
                    (type, summary, effect) = ("partial_refund", "Transaction \(t.transactionId) was partly refunded.",
                                               "None: a partial refund keeps access.")
                case RevocationType.familyRevoke?:
                    (type, summary, effect) = ("revocation",
                                               "Family Sharing access through transaction \(t.transactionId) was revoked.",
                                               entitlements.isEmpty ? "None." : "Ends \(names(entitlements)).")
                default:
                    if RevocationKind(reason: t.revocationReason, type: t.revocationType) == .revoked {
                        (type, summary, effect) = ("revocation",
                                                   "Apple revoked transaction \(t.transactionId) without a refund "
                                                    + "(e.g. an upgrade to another product).",
                                                   entitlements.isEmpty ? "None." : "Ends \(names(entitlements)).")
                    } else {
                        (type, summary, effect) = ("refund", "Transaction \(t.transactionId) was refunded.",
                                                   entitlements.isEmpty ? "None." : "Ends \(names(entitlements)).")
                    }
                }
                out.append(TimelineEvent(at: revoked, source: source, type: type, transactionId: t.transactionId,
                                         summary: summary, effect: effect))
            } else if let expires = t.expiresDate, expires <= now, latest.contains(t.transactionId) {
                out.append(TimelineEvent(
                    at: expires, source: source, type: "expiration", transactionId: t.transactionId,
                    summary: "Transaction \(t.transactionId) (\(t.productId)) expired.",
                    effect: entitlements.isEmpty ? "None." : "Ends \(names(entitlements)) unless a grace period applies."))
            }
        }

        for n in facts.notifications {
            let kind = n.subtype.map { "\(n.type)/\($0)" } ?? n.type
            out.append(TimelineEvent(
                at: n.receivedAt, source: n.source, type: "notification", transactionId: n.originalTransactionId,
                summary: "App Store notification \(kind) about purchase \(n.originalTransactionId).",
                effect: notificationEffect(n.type)))
        }

        for c in facts.reconcileChanges {
            let before = c.beforeStatus ?? "unknown"
            out.append(TimelineEvent(
                at: c.at, source: "reconcile", type: "reconcile", transactionId: c.latestTransactionId,
                summary: "Reconciliation with Apple (\(c.via)) changed purchase \(c.originalTransactionId): "
                    + "\(before) → \(c.afterStatus).",
                effect: c.afterStatus == "active"
                    ? "Access restored" + (c.afterExpiresDate.map { " until \(text($0))." } ?? ".")
                    : "Access ends (\(c.afterStatus))."))
        }

        for e in facts.ownershipEvents {
            let entitlements = facts.purchases.first { $0.purchase.originalTransactionId == e.originalTransactionId }?
                .entitlements ?? []
            if e.fromUserId == facts.userId {
                let to = e.toUserId.map { "user \($0)" } ?? "another user"
                out.append(TimelineEvent(
                    at: e.at, source: "ownership", type: "transfer_out", transactionId: e.originalTransactionId,
                    summary: "Purchase \(e.originalTransactionId) moved to \(to) (\(e.policy) policy).",
                    effect: entitlements.isEmpty ? "None." : "Ends \(names(entitlements)) for this user."))
            } else {
                let from = e.fromUserId.map { "user \($0)" } ?? "another user"
                out.append(TimelineEvent(
                    at: e.at, source: "ownership", type: "transfer_in", transactionId: e.originalTransactionId,
                    summary: "Purchase \(e.originalTransactionId) moved here from \(from) (\(e.policy) policy).",
                    effect: entitlements.isEmpty ? "None." : "Gives \(names(entitlements)) while the purchase is active."))
            }
        }

        for g in facts.grants {
            let until = g.expiresAt.map { " until \(text($0))" } ?? " with no expiry"
            out.append(TimelineEvent(
                at: g.createdAt, source: "admin", type: "grant", transactionId: nil,
                summary: "An admin granted \(g.entitlement) (reason: \(g.reason)).",
                effect: "Gives \(g.entitlement)\(until)."))
            if let removed = g.revokedAt {
                out.append(TimelineEvent(
                    at: removed, source: "admin", type: "grant_removed", transactionId: nil,
                    summary: "An admin removed the grant of \(g.entitlement) (reason: \(g.reason)).",
                    effect: "Ends \(g.entitlement) unless another source gives it."))
            } else if let end = g.expiresAt, end <= now {
                out.append(TimelineEvent(
                    at: end, source: "admin", type: "grant_expired", transactionId: nil,
                    summary: "The grant of \(g.entitlement) expired.",
                    effect: "Ends \(g.entitlement) unless another source gives it."))
            }
        }

        for record in facts.appTransactions {
            let app = record.appTransaction
            let entitlements = AppPurchaseRules.entitlements(for: app, setting: setting)
            out.append(TimelineEvent(
                at: record.firstSeenAt, source: "app_transaction", type: "app_purchase",
                transactionId: app.appTransactionId,
                summary: "App transaction \(app.appTransactionId) (first installed at version "
                    + "\(app.originalApplicationVersion ?? "unknown")) bound to this user.",
                effect: entitlements.isEmpty ? "None." : "Gives \(names(entitlements))."))
        }

        for d in facts.retentionDecisions {
            out.append(TimelineEvent(
                at: d.at, source: "retention", type: "retention_decision", transactionId: d.originalTransactionId,
                summary: "The App Store asked what to show before a possible cancellation of \(d.productId): "
                    + (d.action == "default" ? "the default message." : "\(d.action.replacingOccurrences(of: "_", with: " ")).")
                    + " \(d.reason)",
                effect: "None."))
        }

        // Stable: equal instants keep the order above.
        return out.enumerated().sorted { a, b in
            a.element.at != b.element.at ? a.element.at < b.element.at : a.offset < b.offset
        }.map(\.element)
    }

    /// What a notification type does, in words (its facts are applied as the transaction events show).
    static func notificationEffect(_ type: String) -> String {
        switch type {
        case "SUBSCRIBED", "DID_RENEW", "OFFER_REDEEMED", "RENEWAL_EXTENDED", "REFUND_REVERSED":
            return "Extends or restores access."
        case "REFUND", "REVOKE":
            return "Ends access."
        case "EXPIRED", "GRACE_PERIOD_EXPIRED":
            return "Ends access at the period's end."
        case "DID_FAIL_TO_RENEW":
            return "Renewal failed; access continues only in a grace period."
        default:
            return "Updates the purchase's facts."
        }
    }

    /// `2026-12-24T10:00:00Z`: UTC, whole seconds (sentences are for people; the API's fields keep milliseconds).
    public static func text(_ date: Date) -> String {
        // Instants before 0001 (and NaN, which this comparison also refuses) read as 0001-01-01 in a sentence.
        let seconds = date.timeIntervalSince1970
        return RFC3339.wholeSeconds(secondsSince1970: seconds >= -62_135_596_800 ? seconds : -62_135_596_800)
    }
}
