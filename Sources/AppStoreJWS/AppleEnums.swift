// Every Apple enum is a raw-value struct: Apple adds values every year, and an unknown value must be
// preserved (and stored), never a decoding error. Generated once from apple-verification.md §7.

/// The App Store environment that signed the data (`environment`, or `receiptType` for app transactions). Unknown values are preserved in `rawValue`.
public struct AppStoreEnvironment: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: String
    /// Wraps any wire value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Real purchases.
    public static let production = AppStoreEnvironment(rawValue: "Production")
    /// Sandbox, TestFlight and App Review purchases.
    public static let sandbox = AppStoreEnvironment(rawValue: "Sandbox")
    /// StoreKit Testing in Xcode: signed locally, never by Apple.
    public static let xcode = AppStoreEnvironment(rawValue: "Xcode")
    /// Apple's library unit tests only; never produced by Apple.
    public static let localTesting = AppStoreEnvironment(rawValue: "LocalTesting")
    /// The wire value as text.
    public var description: String { rawValue }
}

/// `type` of an in-app purchase. Unknown values are preserved in `rawValue`.
public struct ProductType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: String
    /// Wraps any wire value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Auto-renewable subscription.
    public static let autoRenewable = ProductType(rawValue: "Auto-Renewable Subscription")
    /// Non-consumable.
    public static let nonConsumable = ProductType(rawValue: "Non-Consumable")
    /// Consumable.
    public static let consumable = ProductType(rawValue: "Consumable")
    /// Non-renewing subscription.
    public static let nonRenewing = ProductType(rawValue: "Non-Renewing Subscription")
    /// The wire value as text.
    public var description: String { rawValue }
}

/// `inAppOwnershipType`: bought by this user or shared with them by Family Sharing. Unknown values are preserved in `rawValue`.
public struct InAppOwnershipType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: String
    /// Wraps any wire value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The user bought it.
    public static let purchased = InAppOwnershipType(rawValue: "PURCHASED")
    /// Family Sharing gave access.
    public static let familyShared = InAppOwnershipType(rawValue: "FAMILY_SHARED")
    /// The wire value as text.
    public var description: String { rawValue }
}

/// `revocationType`: how a refund or revocation applied. Unknown values are preserved in `rawValue`.
public struct RevocationType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: String
    /// Wraps any wire value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Full refund.
    public static let refundFull = RevocationType(rawValue: "REFUND_FULL")
    /// Prorated refund.
    public static let refundProrated = RevocationType(rawValue: "REFUND_PRORATED")
    /// Family Sharing access revoked.
    public static let familyRevoke = RevocationType(rawValue: "FAMILY_REVOKE")
    /// The wire value as text.
    public var description: String { rawValue }
}

/// `offerDiscountType`: the payment mode of an offer. Unknown values are preserved in `rawValue`.
public struct OfferDiscountType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: String
    /// Wraps any wire value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Free trial.
    public static let freeTrial = OfferDiscountType(rawValue: "FREE_TRIAL")
    /// Pay as you go.
    public static let payAsYouGo = OfferDiscountType(rawValue: "PAY_AS_YOU_GO")
    /// Pay up front.
    public static let payUpFront = OfferDiscountType(rawValue: "PAY_UP_FRONT")
    /// One-time payment.
    public static let oneTime = OfferDiscountType(rawValue: "ONE_TIME")
    /// The wire value as text.
    public var description: String { rawValue }
}

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

/// `notificationType` of an App Store Server Notification V2. Unknown values are preserved in `rawValue`.
public struct NotificationType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: String
    /// Wraps any wire value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// `SUBSCRIBED`.
    public static let subscribed = NotificationType(rawValue: "SUBSCRIBED")
    /// `DID_CHANGE_RENEWAL_PREF`.
    public static let didChangeRenewalPref = NotificationType(rawValue: "DID_CHANGE_RENEWAL_PREF")
    /// `DID_CHANGE_RENEWAL_STATUS`.
    public static let didChangeRenewalStatus = NotificationType(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    /// `OFFER_REDEEMED`.
    public static let offerRedeemed = NotificationType(rawValue: "OFFER_REDEEMED")
    /// `DID_RENEW`.
    public static let didRenew = NotificationType(rawValue: "DID_RENEW")
    /// `EXPIRED`.
    public static let expired = NotificationType(rawValue: "EXPIRED")
    /// `DID_FAIL_TO_RENEW`.
    public static let didFailToRenew = NotificationType(rawValue: "DID_FAIL_TO_RENEW")
    /// `GRACE_PERIOD_EXPIRED`.
    public static let gracePeriodExpired = NotificationType(rawValue: "GRACE_PERIOD_EXPIRED")
    /// `PRICE_INCREASE`.
    public static let priceIncrease = NotificationType(rawValue: "PRICE_INCREASE")
    /// `REFUND`.
    public static let refund = NotificationType(rawValue: "REFUND")
    /// `REFUND_DECLINED`.
    public static let refundDeclined = NotificationType(rawValue: "REFUND_DECLINED")
    /// `CONSUMPTION_REQUEST`.
    public static let consumptionRequest = NotificationType(rawValue: "CONSUMPTION_REQUEST")
    /// `RENEWAL_EXTENDED`.
    public static let renewalExtended = NotificationType(rawValue: "RENEWAL_EXTENDED")
    /// `REVOKE`.
    public static let revoke = NotificationType(rawValue: "REVOKE")
    /// `TEST`.
    public static let test = NotificationType(rawValue: "TEST")
    /// `RENEWAL_EXTENSION`.
    public static let renewalExtension = NotificationType(rawValue: "RENEWAL_EXTENSION")
    /// `REFUND_REVERSED`.
    public static let refundReversed = NotificationType(rawValue: "REFUND_REVERSED")
    /// `EXTERNAL_PURCHASE_TOKEN`.
    public static let externalPurchaseToken = NotificationType(rawValue: "EXTERNAL_PURCHASE_TOKEN")
    /// `ONE_TIME_CHARGE`.
    public static let oneTimeCharge = NotificationType(rawValue: "ONE_TIME_CHARGE")
    /// `RESCIND_CONSENT`.
    public static let rescindConsent = NotificationType(rawValue: "RESCIND_CONSENT")
    /// `METADATA_UPDATE`.
    public static let metadataUpdate = NotificationType(rawValue: "METADATA_UPDATE")
    /// `MIGRATION`.
    public static let migration = NotificationType(rawValue: "MIGRATION")
    /// `PRICE_CHANGE`.
    public static let priceChange = NotificationType(rawValue: "PRICE_CHANGE")
    /// Every `notificationType` Apple documents (when this was written). Values outside it are kept in payloads but are
    /// counted as `unknown` in metrics: Xcode-signed data can carry any string.
    public static let documented: Set<NotificationType> = [
        .subscribed, .didChangeRenewalPref, .didChangeRenewalStatus, .offerRedeemed, .didRenew, .expired,
        .didFailToRenew, .gracePeriodExpired, .priceIncrease, .refund, .refundDeclined, .consumptionRequest,
        .renewalExtended, .revoke, .test, .renewalExtension, .refundReversed, .externalPurchaseToken, .oneTimeCharge,
        .rescindConsent, .metadataUpdate, .migration, .priceChange,
    ]
    /// Whether `rawValue` is one of `documented`.
    public var isDocumented: Bool { Self.documented.contains(self) }
    /// The wire value as text.
    public var description: String { rawValue }
}

/// `subtype` of an App Store Server Notification V2. Unknown values are preserved in `rawValue`.
public struct NotificationSubtype: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's wire value.
    public let rawValue: String
    /// Wraps any wire value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// `INITIAL_BUY`.
    public static let initialBuy = NotificationSubtype(rawValue: "INITIAL_BUY")
    /// `RESUBSCRIBE`.
    public static let resubscribe = NotificationSubtype(rawValue: "RESUBSCRIBE")
    /// `DOWNGRADE`.
    public static let downgrade = NotificationSubtype(rawValue: "DOWNGRADE")
    /// `UPGRADE`.
    public static let upgrade = NotificationSubtype(rawValue: "UPGRADE")
    /// `AUTO_RENEW_ENABLED`.
    public static let autoRenewEnabled = NotificationSubtype(rawValue: "AUTO_RENEW_ENABLED")
    /// `AUTO_RENEW_DISABLED`.
    public static let autoRenewDisabled = NotificationSubtype(rawValue: "AUTO_RENEW_DISABLED")
    /// `VOLUNTARY`.
    public static let voluntary = NotificationSubtype(rawValue: "VOLUNTARY")
    /// `BILLING_RETRY`.
    public static let billingRetry = NotificationSubtype(rawValue: "BILLING_RETRY")
    /// `PRICE_INCREASE`.
    public static let priceIncrease = NotificationSubtype(rawValue: "PRICE_INCREASE")
    /// `GRACE_PERIOD`.
    public static let gracePeriod = NotificationSubtype(rawValue: "GRACE_PERIOD")
    /// `PENDING`.
    public static let pending = NotificationSubtype(rawValue: "PENDING")
    /// `ACCEPTED`.
    public static let accepted = NotificationSubtype(rawValue: "ACCEPTED")
    /// `BILLING_RECOVERY`.
    public static let billingRecovery = NotificationSubtype(rawValue: "BILLING_RECOVERY")
    /// `PRODUCT_NOT_FOR_SALE`.
    public static let productNotForSale = NotificationSubtype(rawValue: "PRODUCT_NOT_FOR_SALE")
    /// `SUMMARY`.
    public static let summary = NotificationSubtype(rawValue: "SUMMARY")
    /// `FAILURE`.
    public static let failure = NotificationSubtype(rawValue: "FAILURE")
    /// `UNREPORTED`.
    public static let unreported = NotificationSubtype(rawValue: "UNREPORTED")
    /// Every `subtype` Apple documents (when this was written). Values outside it are kept in payloads but are
    /// counted as `unknown` in metrics: Xcode-signed data can carry any string.
    public static let documented: Set<NotificationSubtype> = [
        .initialBuy, .resubscribe, .downgrade, .upgrade, .autoRenewEnabled, .autoRenewDisabled, .voluntary,
        .billingRetry, .priceIncrease, .gracePeriod, .pending, .accepted, .billingRecovery, .productNotForSale,
        .summary, .failure, .unreported,
    ]
    /// Whether `rawValue` is one of `documented`.
    public var isDocumented: Bool { Self.documented.contains(self) }
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
