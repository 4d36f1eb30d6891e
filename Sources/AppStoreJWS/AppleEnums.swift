public import Domain

// Every Apple enum is a raw-value struct: Apple adds values every year, and an unknown value must be
// preserved (and stored), never a decoding error. Generated once from apple-verification.md §7.
// The vocabularies Bouncer's rules also speak (environment, product type, ownership, revocation type, offer discount
// type, notification type and subtype) have one author, Domain's Vocabulary.swift; these are the rest.

/// The App Store environment (`environment`, or `receiptType` for app transactions): Domain's `StoreEnvironment`.
public typealias AppStoreEnvironment = StoreEnvironment
/// `inAppOwnershipType`: Domain's `OwnershipType`.
public typealias InAppOwnershipType = OwnershipType

/// `transactionReason`: a purchase by the customer or an automatic renewal. Unknown values are preserved in `rawValue`.
public struct TransactionReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: String
    /// Wraps any wire value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Customer-initiated purchase.
    public static let purchase = TransactionReason(rawValue: "PURCHASE")
    /// Automatic renewal.
    public static let renewal = TransactionReason(rawValue: "RENEWAL")
    /// The wire value as text.
    public var description: String { rawValue }
}

/// `billingPlanType` / `renewalBillingPlanType`. Unknown values are preserved in `rawValue`.
public struct BillingPlanType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: String
    /// Wraps any wire value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Billed up front.
    public static let billedUpfront = BillingPlanType(rawValue: "BILLED_UPFRONT")
    /// Billed monthly.
    public static let monthly = BillingPlanType(rawValue: "MONTHLY")
    /// The wire value as text.
    public var description: String { rawValue }
}

/// `originalPlatform` of an app transaction. Unknown values are preserved in `rawValue`.
public struct OriginalPlatform: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: String
    /// Wraps any wire value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// iOS.
    public static let iOS = OriginalPlatform(rawValue: "iOS")
    /// macOS.
    public static let macOS = OriginalPlatform(rawValue: "macOS")
    /// tvOS.
    public static let tvOS = OriginalPlatform(rawValue: "tvOS")
    /// visionOS.
    public static let visionOS = OriginalPlatform(rawValue: "visionOS")
    /// The wire value as text.
    public var description: String { rawValue }
}

/// `consumptionRequestReason` of a CONSUMPTION_REQUEST notification. Unknown values are preserved in `rawValue`.
public struct ConsumptionRequestReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: String
    /// Wraps any wire value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Unintended purchase.
    public static let unintendedPurchase = ConsumptionRequestReason(rawValue: "UNINTENDED_PURCHASE")
    /// Fulfillment issue.
    public static let fulfillmentIssue = ConsumptionRequestReason(rawValue: "FULFILLMENT_ISSUE")
    /// Unsatisfied with the purchase.
    public static let unsatisfiedWithPurchase = ConsumptionRequestReason(rawValue: "UNSATISFIED_WITH_PURCHASE")
    /// Legal reason.
    public static let legal = ConsumptionRequestReason(rawValue: "LEGAL")
    /// Other.
    public static let other = ConsumptionRequestReason(rawValue: "OTHER")
    /// The wire value as text.
    public var description: String { rawValue }
}

/// `revocationReason`: why Apple refunded or revoked a transaction. Unknown values are preserved in `rawValue`.
public struct RevocationReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: Int64
    /// Wraps any wire value, known or not.
    public init(rawValue: Int64) { self.rawValue = rawValue }
    /// Refunded for another reason.
    public static let other = RevocationReason(rawValue: 0)
    /// Refunded due to an issue in the app.
    public static let appIssue = RevocationReason(rawValue: 1)
    /// The wire value as text.
    public var description: String { String(rawValue) }
}

/// `offerType` of a transaction or renewal. Unknown values are preserved in `rawValue`.
public struct OfferType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: Int64
    /// Wraps any wire value, known or not.
    public init(rawValue: Int64) { self.rawValue = rawValue }
    /// Introductory offer.
    public static let introductory = OfferType(rawValue: 1)
    /// Promotional offer.
    public static let promotional = OfferType(rawValue: 2)
    /// Offer code.
    public static let offerCode = OfferType(rawValue: 3)
    /// Win-back offer.
    public static let winBack = OfferType(rawValue: 4)
    /// The wire value as text.
    public var description: String { String(rawValue) }
}

/// `expirationIntent`: why a subscription expired. Unknown values are preserved in `rawValue`.
public struct ExpirationIntent: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: Int64
    /// Wraps any wire value, known or not.
    public init(rawValue: Int64) { self.rawValue = rawValue }
    /// The customer cancelled.
    public static let customerCancelled = ExpirationIntent(rawValue: 1)
    /// Billing error.
    public static let billingError = ExpirationIntent(rawValue: 2)
    /// No consent to a price increase.
    public static let didNotConsentToPriceIncrease = ExpirationIntent(rawValue: 3)
    /// Product not available at renewal.
    public static let productNotAvailable = ExpirationIntent(rawValue: 4)
    /// Other reason.
    public static let other = ExpirationIntent(rawValue: 5)
    /// The wire value as text.
    public var description: String { String(rawValue) }
}

/// `autoRenewStatus`. Unknown values are preserved in `rawValue`.
public struct AutoRenewStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: Int64
    /// Wraps any wire value, known or not.
    public init(rawValue: Int64) { self.rawValue = rawValue }
    /// Auto-renew is off.
    public static let off = AutoRenewStatus(rawValue: 0)
    /// Auto-renew is on.
    public static let on = AutoRenewStatus(rawValue: 1)
    /// The wire value as text.
    public var description: String { String(rawValue) }
}

/// `priceIncreaseStatus`. Unknown values are preserved in `rawValue`.
public struct PriceIncreaseStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: Int64
    /// Wraps any wire value, known or not.
    public init(rawValue: Int64) { self.rawValue = rawValue }
    /// The customer has not responded.
    public static let notResponded = PriceIncreaseStatus(rawValue: 0)
    /// Consented, or notified without consent being needed.
    public static let consented = PriceIncreaseStatus(rawValue: 1)
    /// The wire value as text.
    public var description: String { String(rawValue) }
}

/// `status` of a subscription in notification `data`. Unknown values are preserved in `rawValue`.
public struct SubscriptionStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: Int64
    /// Wraps any wire value, known or not.
    public init(rawValue: Int64) { self.rawValue = rawValue }
    /// Active.
    public static let active = SubscriptionStatus(rawValue: 1)
    /// Expired.
    public static let expired = SubscriptionStatus(rawValue: 2)
    /// In billing retry.
    public static let billingRetry = SubscriptionStatus(rawValue: 3)
    /// In the billing grace period.
    public static let billingGracePeriod = SubscriptionStatus(rawValue: 4)
    /// Revoked.
    public static let revoked = SubscriptionStatus(rawValue: 5)
    /// The wire value as text.
    public var description: String { String(rawValue) }
}
