public import Foundation

/// The verified facts of one App Store real-time retention request (Apple's `DecodedRealtimeRequestBody`).
public struct RetentionRequest: Sendable, Equatable {
    /// The subscription's original transaction id.
    public var originalTransactionId: String
    /// The app's App Store id, when Apple sent one.
    public var appAppleId: Int64?
    /// The auto-renewable subscription being viewed.
    public var productId: String
    /// The device's locale (`userLocale`, e.g. `en-US`).
    public var userLocale: String
    /// Apple's id of this request: a second request with it is a replay.
    public var requestIdentifier: UUID
    /// When Apple signed it.
    public var signedDate: Date
    /// Sandbox or Production.
    public var environment: StoreEnvironment

    /// Creates a value.
    public init(originalTransactionId: String, appAppleId: Int64?, productId: String, userLocale: String,
                requestIdentifier: UUID, signedDate: Date, environment: StoreEnvironment) {
        self.originalTransactionId = originalTransactionId
        self.appAppleId = appAppleId
        self.productId = productId
        self.userLocale = userLocale
        self.requestIdentifier = requestIdentifier
        self.signedDate = signedDate
        self.environment = environment
    }
}

/// When a rule applies; a `nil` condition does not constrain. All present conditions must hold.
public struct RetentionCondition: Sendable, Equatable {
    /// The product viewed is one of these.
    public var productIds: [String]?
    /// The locale starts with one of these (case-insensitive: `en` matches `en-US`).
    public var localePrefixes: [String]?
    /// Whole days since the purchase's first transaction, at least / at most.
    public var minTenureDays: Int?
    public var maxTenureDays: Int?
    /// Renewals of the purchase (its transactions after the first), at least / at most.
    public var minRenewals: Int?
    public var maxRenewals: Int?
    /// Whether the user (or, unbound, the purchase) had a transaction refunded.
    public var refunded: Bool?
    /// Whether Apple's renewal info says the subscription is in billing retry.
    public var inBillingRetry: Bool?
    /// Promotional offers the purchase already redeemed, at most.
    public var maxOffersUsed: Int?

    /// Creates a value.
    public init(productIds: [String]? = nil, localePrefixes: [String]? = nil, minTenureDays: Int? = nil,
                maxTenureDays: Int? = nil, minRenewals: Int? = nil, maxRenewals: Int? = nil, refunded: Bool? = nil,
                inBillingRetry: Bool? = nil, maxOffersUsed: Int? = nil) {
        self.productIds = productIds
        self.localePrefixes = localePrefixes
        self.minTenureDays = minTenureDays
        self.maxTenureDays = maxTenureDays
        self.minRenewals = minRenewals
        self.maxRenewals = maxRenewals
        self.refunded = refunded
        self.inBillingRetry = inBillingRetry
        self.maxOffersUsed = maxOffersUsed
    }
}

/// What the App Store shows when a rule matches: exactly one of Apple's three real-time answers.
public enum RetentionAction: Sendable, Equatable {
    /// A text message (with or without an image).
    case message(messageId: UUID)
    /// A switch-plan message suggesting `productId`.
    case alternateProduct(productId: String, messageId: UUID)
    /// A promotional offer of the viewed product, signed with the project's key, and its message.
    case promotionalOffer(offerId: String, messageId: UUID)

    /// `message`, `alternate_product` or `promotional_offer`.
    public var kind: String {
        switch self {
        case .message: return "message"
        case .alternateProduct: return "alternate_product"
        case .promotionalOffer: return "promotional_offer"
        }
    }

    /// The message every action shows.
    public var messageId: UUID {
        switch self {
        case .message(let id), .alternateProduct(_, let id), .promotionalOffer(_, let id): return id
        }
    }
}

/// One rule: a name for people, its conditions and its action.
public struct RetentionRule: Sendable, Equatable {
    public var name: String
    public var when: RetentionCondition
    public var action: RetentionAction

    /// Creates a value.
    public init(name: String, when: RetentionCondition = RetentionCondition(), action: RetentionAction) {
        self.name = name
        self.when = when
        self.action = action
    }
}

/// What Bouncer knows locally about the subscriber a request is about (read in one query by `RetentionStore`).
public struct RetentionFacts: Sendable, Equatable {
    /// The product viewed and the device's locale (from the request).
    public var productId: String
    public var locale: String
    /// Whether Bouncer has the purchase; without it only product and locale conditions can match.
    public var purchaseKnown: Bool
    /// The user holding the purchase, if bound.
    public var userId: String?
    /// The purchase's first transaction's purchase date.
    public var firstPurchaseDate: Date?
    /// The purchase's transactions after the first.
    public var renewals: Int?
    /// A refunded transaction among the user's purchases (or the purchase's, unbound).
    public var refunded: Bool
    /// Apple's renewal info: in billing retry.
    public var inBillingRetry: Bool
    /// Distinct promotional offers the purchase redeemed.
    public var offersUsed: Int

    /// Creates a value.
    public init(productId: String, locale: String, purchaseKnown: Bool = false, userId: String? = nil,
                firstPurchaseDate: Date? = nil, renewals: Int? = nil, refunded: Bool = false,
                inBillingRetry: Bool = false, offersUsed: Int = 0) {
        self.productId = productId
        self.locale = locale
        self.purchaseKnown = purchaseKnown
        self.userId = userId
        self.firstPurchaseDate = firstPurchaseDate
        self.renewals = renewals
        self.refunded = refunded
        self.inBillingRetry = inBillingRetry
        self.offersUsed = offersUsed
    }

    /// Whole days from the first purchase to `now` (never negative); nil when unknown.
    public func tenureDays(at now: Date) -> Int? {
        guard let first = firstPurchaseDate else { return nil }
        let days = (now.timeIntervalSince(first) / 86_400).rounded(.down)
        guard days.isFinite else { return nil }
        return days <= 0 ? 0 : Int(min(days, 1_000_000))
    }
}

/// The rules' answer: the first matching rule and its action, or none (Apple then shows the default message).
public struct RetentionDecision: Sendable, Equatable {
    /// The matching rule's position (0-based) and name; nil when none matched.
    public var ruleIndex: Int?
    public var ruleName: String?
    /// The action; nil when no rule matched.
    public var action: RetentionAction?
    /// Why, for people (the timeline and simulate show it).
    public var reason: String
}

/// A decision as recorded for one real request (table `retention_decisions`).
public struct RecordedRetentionDecision: Sendable, Equatable {
    public var projectId: UUID
    public var request: RetentionRequest
    public var decision: RetentionDecision
    public var decidedAt: Date
}

/// The pure rules of retention messaging: freshness, first match, and the input bounds of a rule list.
public enum RetentionRules {
    /// How old a request's `signedDate` may be (Apple waits about 700 ms for an answer: a minute-old request is
    /// nobody's live screen), and how far ahead of our clock it may be (clock skew).
    public static let maxAge: TimeInterval = 300
    public static let maxSkew: TimeInterval = 60
    /// Bounds of a rule list.
    public static let maxRules = 100
    public static let nameLength = 1...100
    public static let maxListItems = 50
    public static let localePrefixLength = 1...35
    public static let maxCount = 100_000

    /// Whether a request signed at `signedDate` may still get an answer at `now`.
    public static func isFresh(signedDate: Date, at now: Date) -> Bool {
        let age = now.timeIntervalSince(signedDate)
        return age <= maxAge && age >= -maxSkew
    }

    /// The first rule of `rules` whose conditions all hold for `facts` at `now`.
    public static func decide(_ rules: [RetentionRule], facts: RetentionFacts, at now: Date) -> RetentionDecision {
        for (index, rule) in rules.enumerated() where matches(rule.when, facts, at: now) {
            return RetentionDecision(ruleIndex: index, ruleName: rule.name, action: rule.action,
                                     reason: "Rule \(index + 1) \"\(rule.name)\" matched: \(describe(rule.when)).")
        }
        let reason = rules.isEmpty ? "The project has no retention rules: Apple shows the default message."
            : "None of the \(rules.count) retention rules matched: Apple shows the default message."
        return RetentionDecision(ruleIndex: nil, ruleName: nil, action: nil, reason: reason)
    }

    /// Whether every present condition of `c` holds. A tenure or renewals condition never holds for an unknown
    /// purchase.
    public static func matches(_ c: RetentionCondition, _ facts: RetentionFacts, at now: Date) -> Bool {
        if let products = c.productIds, !products.contains(facts.productId) { return false }
        if let prefixes = c.localePrefixes {
            let locale = facts.locale.lowercased()
            guard prefixes.contains(where: { locale.hasPrefix($0.lowercased()) }) else { return false }
        }
        if c.minTenureDays != nil || c.maxTenureDays != nil {
            guard let tenure = facts.tenureDays(at: now) else { return false }
            if let min = c.minTenureDays, tenure < min { return false }
            if let max = c.maxTenureDays, tenure > max { return false }
        }
        if c.minRenewals != nil || c.maxRenewals != nil {
            guard let renewals = facts.renewals else { return false }
            if let min = c.minRenewals, renewals < min { return false }
            if let max = c.maxRenewals, renewals > max { return false }
        }
        if let refunded = c.refunded, refunded != facts.refunded { return false }
        if let retry = c.inBillingRetry, retry != facts.inBillingRetry { return false }
        if let max = c.maxOffersUsed, facts.offersUsed > max { return false }
        return true
    }

    /// The conditions in words (`any subscriber` when none).
    static func describe(_ c: RetentionCondition) -> String {
        var parts: [String] = []
        if let p = c.productIds { parts.append("product in [\(p.joined(separator: ", "))]") }
        if let l = c.localePrefixes { parts.append("locale starts with [\(l.joined(separator: ", "))]") }
        if let v = c.minTenureDays { parts.append("tenure ≥ \(v) days") }
        if let v = c.maxTenureDays { parts.append("tenure ≤ \(v) days") }
        if let v = c.minRenewals { parts.append("renewals ≥ \(v)") }
        if let v = c.maxRenewals { parts.append("renewals ≤ \(v)") }
        if let v = c.refunded { parts.append(v ? "had a refund" : "no refund") }
        if let v = c.inBillingRetry { parts.append(v ? "in billing retry" : "not in billing retry") }
        if let v = c.maxOffersUsed { parts.append("offers used ≤ \(v)") }
        return parts.isEmpty ? "any subscriber" : parts.joined(separator: ", ")
    }

    /// Every bound `rules` breaks, with JSON paths (`rules.3.when.product_ids.0`).
    public static func problems(_ rules: [RetentionRule]) -> [FieldProblem] {
        var out: [FieldProblem] = []
        if rules.count > maxRules {
            out.append(FieldProblem(path: ["rules"], message: "Array must contain at most \(maxRules) element(s)"))
        }
        for (index, rule) in rules.enumerated() {
            let path = ["rules", String(index)]
            text(rule.name, path + ["name"], nameLength, &out)
            let w = rule.when
            list(w.productIds, path + ["when", "product_ids"], ProjectRules.productIdLength, &out)
            list(w.localePrefixes, path + ["when", "locale_prefixes"], localePrefixLength, &out)
            for (name, value) in [("min_tenure_days", w.minTenureDays), ("max_tenure_days", w.maxTenureDays),
                                  ("min_renewals", w.minRenewals), ("max_renewals", w.maxRenewals),
                                  ("max_offers_used", w.maxOffersUsed)] {
                if let value, value < 0 || value > maxCount {
                    out.append(FieldProblem(path: path + ["when", name], message: "Number must be between 0 and \(maxCount)"))
                }
            }
            switch rule.action {
            case .message: break
            case .alternateProduct(let product, _):
                text(product, path + ["action", "alternate_product_id"], ProjectRules.productIdLength, &out)
            case .promotionalOffer(let offer, _):
                text(offer, path + ["action", "promotional_offer_id"], OfferSignatureRules.offerIdLength, &out)
            }
        }
        return out
    }

    private static func list(_ values: [String]?, _ path: [String], _ length: ClosedRange<Int>,
                             _ out: inout [FieldProblem]) {
        guard let values else { return }
        if values.isEmpty || values.count > maxListItems {
            out.append(FieldProblem(path: path, message: "Array must contain 1 to \(maxListItems) element(s)"))
        }
        for (index, value) in values.prefix(maxListItems).enumerated() {
            text(value, path + [String(index)], length, &out)
        }
    }

    private static func text(_ value: String, _ path: [String], _ length: ClosedRange<Int>, _ out: inout [FieldProblem]) {
        let count = value.unicodeScalars.count
        if count < length.lowerBound || count > length.upperBound {
            out.append(FieldProblem(path: path, message: "String must contain \(length.lowerBound) to "
                + "\(length.upperBound) character(s)"))
        } else if value.unicodeScalars.contains(where: { $0.value == 0 || $0 == "\u{2063}" }) {
            out.append(FieldProblem(path: path, message: "String must not contain NUL or U+2063 characters"))
        }
    }
}

/// Where a project's retention rules and decisions live (PostgreSQL in production).
public protocol RetentionStore: Sendable {
    /// The project's rules in order (empty when none were set).
    func rules(projectId: UUID) throws -> [RetentionRule]
    /// Replaces the project's rules in one transaction, with its audit entry.
    func replaceRules(projectId: UUID, rules: [RetentionRule], at now: Date) throws
    /// The project's rules and the facts of the purchase `originalTransactionId` in `environment`, in one query.
    func context(projectId: UUID, environment: StoreEnvironment, originalTransactionId: String, productId: String,
                 locale: String) throws -> (rules: [RetentionRule], facts: RetentionFacts)
    /// The newest purchase of `productId` the user holds (for simulate by user id), nil when none.
    func purchase(projectId: UUID, userId: String, productId: String) throws
        -> (environment: StoreEnvironment, originalTransactionId: String)?
    /// Records a real decision in its own transaction; false (nothing written) when its request identifier was
    /// recorded before: a replay.
    func record(_ decision: RecordedRetentionDecision) throws -> Bool
    /// Records a Retention Messaging change Apple accepted: its audit entry only, in a transaction of its own.
    func recordRetentionMessagingChange(projectId: UUID, changes: [AuditChange]) throws
    /// The project's latest `limit` decisions, newest first.
    func recentDecisions(projectId: UUID, limit: Int) throws -> [RetentionDecisionRecord]
}
