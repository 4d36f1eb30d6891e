public import Domain
public import Primitives

// Every Apple enum is a raw-value struct: Apple adds values every year, and an unknown value must be
// preserved (and stored), never a decoding error. Generated once from apple-verification.md §7.
// The vocabularies Bouncer's rules also speak (environment, product type, ownership, revocation type, offer discount
// type, notification type and subtype) have one author, Domain's Vocabulary.swift; these are the rest.

/// The App Store environment (`environment`, or `receiptType` for app transactions): Domain's `StoreEnvironment`.
public typealias AppStoreEnvironment = StoreEnvironment
/// `inAppOwnershipType`: Domain's `OwnershipType`.
public typealias InAppOwnershipType = OwnershipType

/// `transactionReason`: a purchase by the customer or an automatic renewal. Unknown values are preserved in `rawValue`.
public typealias TransactionReason = OpenValue<TransactionReasonTag, String>
/// Tells `TransactionReason` apart from the other open vocabularies.
public enum TransactionReasonTag {}

extension TransactionReason {
    /// Customer-initiated purchase.
    public static let purchase = TransactionReason(rawValue: "PURCHASE")
    /// Automatic renewal.
    public static let renewal = TransactionReason(rawValue: "RENEWAL")
}

/// `billingPlanType` / `renewalBillingPlanType`. Unknown values are preserved in `rawValue`.
public typealias BillingPlanType = OpenValue<BillingPlanTypeTag, String>
/// Tells `BillingPlanType` apart from the other open vocabularies.
public enum BillingPlanTypeTag {}

extension BillingPlanType {
    /// Billed up front.
    public static let billedUpfront = BillingPlanType(rawValue: "BILLED_UPFRONT")
    /// Billed monthly.
    public static let monthly = BillingPlanType(rawValue: "MONTHLY")
}

/// `originalPlatform` of an app transaction. Unknown values are preserved in `rawValue`.
public typealias OriginalPlatform = OpenValue<OriginalPlatformTag, String>
/// Tells `OriginalPlatform` apart from the other open vocabularies.
public enum OriginalPlatformTag {}

extension OriginalPlatform {
    /// iOS.
    public static let iOS = OriginalPlatform(rawValue: "iOS")
    /// macOS.
    public static let macOS = OriginalPlatform(rawValue: "macOS")
    /// tvOS.
    public static let tvOS = OriginalPlatform(rawValue: "tvOS")
    /// visionOS.
    public static let visionOS = OriginalPlatform(rawValue: "visionOS")
}

/// `consumptionRequestReason` of a CONSUMPTION_REQUEST notification. Unknown values are preserved in `rawValue`.
public typealias ConsumptionRequestReason = OpenValue<ConsumptionRequestReasonTag, String>
/// Tells `ConsumptionRequestReason` apart from the other open vocabularies.
public enum ConsumptionRequestReasonTag {}

extension ConsumptionRequestReason {
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
}

/// `revocationReason`: why Apple refunded or revoked a transaction. Unknown values are preserved in `rawValue`.
public typealias RevocationReason = OpenValue<RevocationReasonTag, Int64>
/// Tells `RevocationReason` apart from the other open vocabularies.
public enum RevocationReasonTag {}

extension RevocationReason {
    /// Refunded for another reason.
    public static let other = RevocationReason(rawValue: 0)
    /// Refunded due to an issue in the app.
    public static let appIssue = RevocationReason(rawValue: 1)
}

/// `offerType` of a transaction or renewal. Unknown values are preserved in `rawValue`.
public typealias OfferType = OpenValue<OfferTypeTag, Int64>
/// Tells `OfferType` apart from the other open vocabularies.
public enum OfferTypeTag {}

extension OfferType {
    /// Introductory offer.
    public static let introductory = OfferType(rawValue: 1)
    /// Promotional offer.
    public static let promotional = OfferType(rawValue: 2)
    /// Offer code.
    public static let offerCode = OfferType(rawValue: 3)
    /// Win-back offer.
    public static let winBack = OfferType(rawValue: 4)
}

/// `expirationIntent`: why a subscription expired. Unknown values are preserved in `rawValue`.
public typealias ExpirationIntent = OpenValue<ExpirationIntentTag, Int64>
/// Tells `ExpirationIntent` apart from the other open vocabularies.
public enum ExpirationIntentTag {}

extension ExpirationIntent {
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
}

/// `autoRenewStatus`. Unknown values are preserved in `rawValue`.
public typealias AutoRenewStatus = OpenValue<AutoRenewStatusTag, Int64>
/// Tells `AutoRenewStatus` apart from the other open vocabularies.
public enum AutoRenewStatusTag {}

extension AutoRenewStatus {
    /// Auto-renew is off.
    public static let off = AutoRenewStatus(rawValue: 0)
    /// Auto-renew is on.
    public static let on = AutoRenewStatus(rawValue: 1)
}

/// `priceIncreaseStatus`. Unknown values are preserved in `rawValue`.
public typealias PriceIncreaseStatus = OpenValue<PriceIncreaseStatusTag, Int64>
/// Tells `PriceIncreaseStatus` apart from the other open vocabularies.
public enum PriceIncreaseStatusTag {}

extension PriceIncreaseStatus {
    /// The customer has not responded.
    public static let notResponded = PriceIncreaseStatus(rawValue: 0)
    /// Consented, or notified without consent being needed.
    public static let consented = PriceIncreaseStatus(rawValue: 1)
}

/// `status` of a subscription in notification `data`. Unknown values are preserved in `rawValue`.
public typealias SubscriptionStatus = OpenValue<SubscriptionStatusTag, Int64>
/// Tells `SubscriptionStatus` apart from the other open vocabularies.
public enum SubscriptionStatusTag {}

extension SubscriptionStatus {
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
}
