public import Foundation

/// The answer to one real-time retention request: an action (and, for a promotional offer, its V2 signature).
public struct RetentionAnswer: Sendable, Equatable {
    /// What the App Store shows.
    public var action: RetentionAction
    /// `promotionalOfferSignatureV2`: the offer's compact JWS, signed with the project's In-App Purchase key.
    public var offerSignature: String?
}

/// What simulate shows: the decision, the facts behind it, and whether the purchase is known.
public struct RetentionSimulation: Sendable, Equatable {
    public var decision: RetentionDecision
    public var facts: RetentionFacts
    public var originalTransactionId: String?
    /// The tenure the rules saw (days), nil when unknown.
    public var tenureDays: Int?
}

/// Retention Messaging hosted by Bouncer: the Get Retention Message endpoint's decisions, the project's rules and
/// simulations. Time is injected; the rules themselves are `RetentionRules` (pure).
public struct RetentionMessaging: Sendable {
    private let store: any RetentionStore
    private let projects: any ProjectStore
    private let offers: OfferSignatures
    private let now: @Sendable () -> Date

    /// Use cases over `store`, signing offers through `offers` (the one promotional-offer signer).
    public init(store: any RetentionStore, projects: any ProjectStore, offers: OfferSignatures,
                now: @escaping @Sendable () -> Date) {
        self.store = store
        self.projects = projects
        self.offers = offers
        self.now = now
    }

    /// Answers a verified request: freshness, the rules over the stored facts, the offer's signature, then the
    /// decision recorded in its own transaction (a request identifier seen before is a replay and gets nothing).
    /// Every failure throws: the route answers so that Apple shows the default message.
    public func answer(_ request: RetentionRequest, for project: Project) throws -> RetentionAnswer {
        let at = now()
        guard RetentionRules.isFresh(signedDate: request.signedDate, at: at) else {
            throw DomainError(.retentionRequestStale, "The retention request is outside the freshness window.")
        }
        let (rules, facts) = try store.context(
            projectId: project.id, environment: request.environment, originalTransactionId: request.originalTransactionId,
            productId: request.productId, locale: request.userLocale)
        var decision = RetentionRules.decide(rules, facts: facts, at: at)
        var signature: String?
        var signingFailure: (any Error)?
        if case .promotionalOffer(let offerId, _) = decision.action {
            do {
                let signed = try offers.sign(OfferSignatureRequest(
                    productId: request.productId, offerId: offerId, format: .jws,
                    transactionId: request.originalTransactionId), for: project)
                if case .jws(let jws) = signed { signature = jws }
            } catch {
                // Recorded as what Apple gets: the default message, and why.
                signingFailure = error
                let code = (error as? DomainError)?.code.rawValue ?? "an internal error"
                decision = RetentionDecision(
                    ruleIndex: decision.ruleIndex, ruleName: decision.ruleName, action: nil,
                    reason: decision.reason + " The offer could not be signed (\(code)): Apple shows the default message.")
            }
        }
        let recorded = RecordedRetentionDecision(projectId: project.id, request: request, decision: decision, decidedAt: at)
        guard try store.record(recorded) else {
            throw DomainError(.retentionRequestReplayed, "The retention request was already answered.")
        }
        if let signingFailure { throw signingFailure }
        guard let action = decision.action else {
            throw DomainError(.retentionNoMatchingRule, decision.reason)
        }
        return RetentionAnswer(action: action, offerSignature: signature)
    }

    /// The project's latest real decisions, newest first (at most `recentDecisionsLimit`).
    public func decisions(projectId: UUID) throws -> [RetentionDecisionRecord] {
        try existing(projectId)
        return try store.recentDecisions(projectId: projectId, limit: Self.recentDecisionsLimit)
    }

    /// How many decisions `decisions(projectId:)` shows.
    public static let recentDecisionsLimit = 50

    /// The project's rules.
    public func rules(projectId: UUID) throws -> [RetentionRule] {
        try existing(projectId)
        return try store.rules(projectId: projectId)
    }

    /// Replaces the project's rules after checking every bound.
    public func replaceRules(projectId: UUID, _ rules: [RetentionRule]) throws {
        let problems = RetentionRules.problems(rules)
        guard problems.isEmpty else { throw DomainError(.invalidInput, "Invalid retention rules.", details: problems) }
        try existing(projectId)
        try store.replaceRules(projectId: projectId, rules: rules, at: now())
    }

    /// What a request about the purchase (or the user's newest purchase of `productId`) would get now; writes
    /// nothing and signs nothing.
    public func simulate(projectId: UUID, originalTransactionId: String?, userId: String?, productId: String,
                         locale: String) throws -> RetentionSimulation {
        try existing(projectId)
        var purchase: (environment: StoreEnvironment, originalTransactionId: String)?
        if let originalTransactionId {
            purchase = (.production, originalTransactionId)
        } else if let userId {
            purchase = try store.purchase(projectId: projectId, userId: userId, productId: productId)
        }
        let at = now()
        var context = try store.context(
            projectId: projectId, environment: purchase?.environment ?? .production,
            originalTransactionId: purchase?.originalTransactionId ?? "", productId: productId, locale: locale)
        if originalTransactionId != nil, !context.facts.purchaseKnown {
            // Not a Production purchase: the same id in Sandbox.
            context = try store.context(projectId: projectId, environment: .sandbox,
                                        originalTransactionId: purchase?.originalTransactionId ?? "",
                                        productId: productId, locale: locale)
        }
        let decision = RetentionRules.decide(context.rules, facts: context.facts, at: at)
        return RetentionSimulation(decision: decision, facts: context.facts,
                                   originalTransactionId: context.facts.purchaseKnown ? purchase?.originalTransactionId : nil,
                                   tenureDays: context.facts.tenureDays(at: at))
    }

    private func existing(_ projectId: UUID) throws {
        guard try projects.project(id: projectId) != nil else {
            throw DomainError(.projectNotFound, "Project not found.")
        }
    }
}
