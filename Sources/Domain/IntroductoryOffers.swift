public import Foundation

/// A request to decide (and sign) whether a user may take a product's introductory offer
/// (`POST /v1/offers/:publicKey/introductory-eligibility`).
public struct IntroductoryOfferRequest: Sendable, Equatable {
    /// The auto-renewable subscription's product id (must be mapped in the project).
    public var productId: String
    /// The user as the app's backend knows them (canonical under the project's appAccountToken policy).
    public var userId: String
    /// A transaction id (or `appTransactionId`) of the customer: Apple's optional `transactionId` claim, and one
    /// more identity of the person.
    public var transactionId: String?

    /// Creates a value.
    public init(productId: String, userId: String, transactionId: String?) {
        self.productId = productId
        self.userId = userId
        self.transactionId = transactionId
    }
}

/// How a stored introductory offer was found to be the same person's.
public enum IntroductoryOfferIdentity: String, Sendable, CaseIterable {
    /// A purchase the user holds (or held).
    case userId = "user_id"
    /// A transaction carrying an `appAccountToken` of the user's (their own purchases' tokens, the user id itself
    /// when it is a UUID, or the given transaction's).
    case appAccountToken = "app_account_token"
    /// A transaction carrying an `appTransactionId` of the user's purchases or of the given transaction.
    case appTransactionId = "app_transaction_id"
    /// The given transaction's own purchase.
    case transactionId = "transaction_id"
}

/// One stored verified transaction that redeemed an introductory offer (`offerType` 1) and belongs to the person.
public struct IntroductoryOfferUse: Sendable, Equatable {
    /// The transaction that redeemed it.
    public var transactionId: String
    /// Its product.
    public var productId: String
    /// Its `subscriptionGroupIdentifier`, when Apple signed one.
    public var subscriptionGroup: String?
    /// Why it is the same person's.
    public var matchedBy: IntroductoryOfferIdentity

    /// Creates a value.
    public init(transactionId: String, productId: String, subscriptionGroup: String?, matchedBy: IntroductoryOfferIdentity) {
        self.transactionId = transactionId
        self.productId = productId
        self.subscriptionGroup = subscriptionGroup
        self.matchedBy = matchedBy
    }
}

/// What the store knows for one decision: the product's subscription group (from any stored transaction of the
/// product the person's facts or the project's introductory offers show; `nil`: unknown) and the person's
/// introductory offers.
public struct IntroductoryOfferFacts: Sendable, Equatable {
    /// The requested product's `subscriptionGroupIdentifier`, when a stored transaction names it.
    public var productGroup: String?
    /// The person's introductory offers, across Apple accounts.
    public var uses: [IntroductoryOfferUse]

    /// Creates a value.
    public init(productGroup: String?, uses: [IntroductoryOfferUse]) {
        self.productGroup = productGroup
        self.uses = uses
    }
}

/// Why a user is (not) eligible.
public enum IntroductoryOfferReason: String, Sendable, CaseIterable {
    /// No introductory offer of the product's subscription group is known for the person.
    case noIntroductoryOfferUsed = "no_introductory_offer_used"
    /// The person already redeemed this product's introductory offer.
    case usedForProduct = "introductory_offer_used"
    /// The person already redeemed an introductory offer of another product in the same subscription group.
    case usedInGroup = "introductory_offer_used_in_group"
}

/// The decision, and the facts it rests on.
public struct IntroductoryOfferDecision: Sendable, Equatable {
    /// Whether the app may offer the introductory offer.
    public var eligible: Bool
    /// Why.
    public var reason: IntroductoryOfferReason
    /// The redemption that made the user ineligible (`nil` when eligible).
    public var use: IntroductoryOfferUse?
}

/// The rule: one introductory offer per subscription group per person, a person being every Apple account that
/// shares the user id, an `appAccountToken` or an `appTransactionId` with them (Apple's own rule counts per Apple
/// account; the server's decision, signed, overrides it). Pure: facts in, decision out.
public enum IntroductoryOfferRules {
    /// Transaction ids (and `appTransactionId`s): decimal, as for promotional offers.
    public static let transactionIdLength = OfferSignatureRules.transactionIdLength

    /// The decision for `productId` from `facts`: the same product's redemption first, then one in its group.
    public static func decide(productId: String, facts: IntroductoryOfferFacts) -> IntroductoryOfferDecision {
        if let use = facts.uses.first(where: { $0.productId == productId }) {
            return IntroductoryOfferDecision(eligible: false, reason: .usedForProduct, use: use)
        }
        if let group = facts.productGroup, let use = facts.uses.first(where: { $0.subscriptionGroup == group }) {
            return IntroductoryOfferDecision(eligible: false, reason: .usedInGroup, use: use)
        }
        return IntroductoryOfferDecision(eligible: true, reason: .noIntroductoryOfferUsed)
    }

    /// Every rule the fields break; `nil` means absent (or already reported by the caller).
    public static func problems(productId: String?, userId: String?, transactionId: String?) -> [FieldProblem] {
        var out = OfferSignatureRules.problems(productId: productId, offerId: nil, format: .jws, appAccountToken: nil,
                                               transactionId: transactionId)
        if let userId {
            out += GrantRules.problems(userId: userId).map { FieldProblem(path: ["user_id"], message: $0.message) }
        }
        return out
    }
}

/// The introductory-offer eligibility decision's own claim (`aud` `introductory-offer-eligibility`), for
/// `Product.PurchaseOption.introductoryOfferEligibility(compactJWS:)`.
public struct IntroductoryOfferEligibilityClaim: StoreKitSignedRequest {
    /// `aud` for introductory-offer eligibility.
    public static let audience = "introductory-offer-eligibility"
    /// `allowIntroductoryOffer`: the decision.
    public var allowIntroductoryOffer: Bool
}

/// The claims of Apple's introductory-offer eligibility JWS: the base claims and `productId`,
/// `allowIntroductoryOffer`, optional `transactionId`.
public typealias IntroductoryOfferEligibilityClaims = StoreKitSignatureClaims<IntroductoryOfferEligibilityClaim>

extension StoreKitSignatureClaims where Request == IntroductoryOfferEligibilityClaim {
    /// `allowIntroductoryOffer`: the decision.
    public var allowIntroductoryOffer: Bool { request.allowIntroductoryOffer }
}

/// Reads the person's introductory offers from stored verified facts, in one bounded query.
public protocol IntroductoryOfferFactsStore: Sendable {
    /// The facts for `userId` (and `transactionId`'s purchase and identities) about `productId` in `projectId`.
    func introductoryOfferFacts(projectId: UUID, userId: String, transactionId: String?, productId: String) throws
        -> IntroductoryOfferFacts
}

/// The answer: the decision and the JWS StoreKit takes.
public struct IntroductoryOfferEligibilityAnswer: Sendable, Equatable {
    /// The decision.
    public var decision: IntroductoryOfferDecision
    /// The compact JWS (`allowIntroductoryOffer` is the decision).
    public var signature: String
}

/// Decides introductory-offer eligibility for a project's user and signs the decision with the project's In-App
/// Purchase key. Order: the input's rules, the product must be mapped, credentials present, the facts (one query),
/// the rule, then sign. Nonce and clock are injected.
public struct IntroductoryOfferEligibility: Sendable {
    private let projects: any ProjectStore
    private let credentials: CredentialAdministration
    private let signer: any PromotionalOfferSigning
    private let facts: any IntroductoryOfferFactsStore
    private let now: @Sendable () -> Date
    private let newNonce: @Sendable () -> UUID

    /// Use cases over `projects` (product mappings), `credentials` (the key), `signer` and `facts`.
    public init(projects: any ProjectStore, credentials: CredentialAdministration, signer: any PromotionalOfferSigning,
                facts: any IntroductoryOfferFactsStore, now: @escaping @Sendable () -> Date,
                nonce: @escaping @Sendable () -> UUID = { UUID() }) {
        self.projects = projects
        self.credentials = credentials
        self.signer = signer
        self.facts = facts
        self.now = now
        self.newNonce = nonce
    }

    /// Decides and signs `request` for `project`.
    public func decide(_ request: IntroductoryOfferRequest, for project: Project) throws
        -> IntroductoryOfferEligibilityAnswer
    {
        let problems = IntroductoryOfferRules.problems(productId: request.productId, userId: request.userId,
                                                       transactionId: request.transactionId)
        guard problems.isEmpty else {
            throw DomainError(.invalidInput, "Invalid introductory offer eligibility request.", details: problems)
        }
        guard try projects.products(projectId: project.id).contains(where: { $0.productId == request.productId }) else {
            throw DomainError(.productNotFound, "Product \(request.productId) is not mapped in the project.")
        }
        let opened = try OfferSignatures.unsealedCredentials(project, credentials)
        let known = try facts.introductoryOfferFacts(projectId: project.id, userId: request.userId,
                                                     transactionId: request.transactionId, productId: request.productId)
        let decision = IntroductoryOfferRules.decide(productId: request.productId, facts: known)
        let at = now().timeIntervalSince1970
        guard let issuedAt = Int64(exactly: at.rounded(.down)) else { throw OfferSignatures.clockOutOfRange(at) }
        let claims = IntroductoryOfferEligibilityClaims(
            issuerId: opened.credentials.issuerId, issuedAt: issuedAt, bundleId: project.bundleId,
            nonce: newNonce().lowercasedText, productId: request.productId,
            request: IntroductoryOfferEligibilityClaim(allowIntroductoryOffer: decision.eligible),
            transactionId: request.transactionId)
        return IntroductoryOfferEligibilityAnswer(decision: decision, signature: try signer.signEligibility(claims, with: opened))
    }
}
