import Foundation
public import Primitives

/// An App Store environment (`Production`, `Sandbox`, `Xcode`, `LocalTesting`).
///
/// A raw-value struct rather than an enum: Apple adds values, and an unknown one must be kept, not rejected.
public typealias StoreEnvironment = OpenValue<StoreEnvironmentTag, String>
/// Tells `StoreEnvironment` apart from the other open vocabularies.
public enum StoreEnvironmentTag {}

extension StoreEnvironment {
    /// Real purchases.
    public static let production = StoreEnvironment(rawValue: "Production")
    /// TestFlight, App Review and sandbox testers.
    public static let sandbox = StoreEnvironment(rawValue: "Sandbox")
    /// StoreKit testing in Xcode: signed by a local key, never by Apple.
    public static let xcode = StoreEnvironment(rawValue: "Xcode")
    /// StoreKit testing outside Xcode; treated like Xcode.
    public static let localTesting = StoreEnvironment(rawValue: "LocalTesting")

    /// The environments Apple itself signs.
    public var isSignedByApple: Bool { self == .production || self == .sandbox }
    /// Xcode or LocalTesting: StoreKit testing data, which anyone can sign.
    public var isLocalTesting: Bool { self == .xcode || self == .localTesting }

    /// Whether a tenant that accepts `environments`, and StoreKit testing data when `allowXcode`, accepts data from
    /// this environment: the one statement of the rule (`Project.accepts`, the verifiers' `VerificationPolicy`).
    /// Xcode and LocalTesting data (which anyone can sign) pass only with `allowXcode` AND Sandbox among
    /// `environments`: test data never satisfies a tenant that did not opt in, nor a Production-only one.
    @inlinable
    public func isAccepted(in environments: some Collection<StoreEnvironment>, allowXcode: Bool) -> Bool {
        if isLocalTesting { return allowXcode && environments.contains(.sandbox) }
        return environments.contains(self)
    }
}

/// The kind of in-app product a transaction is for (`type` in Apple's payload).
public typealias ProductType = OpenValue<ProductTypeTag, String>
/// Tells `ProductType` apart from the other open vocabularies.
public enum ProductTypeTag {}

extension ProductType {
    /// Renews until cancelled; the only type whose renewal info matters.
    public static let autoRenewable = ProductType(rawValue: "Auto-Renewable Subscription")
    /// Bought once, kept forever.
    public static let nonConsumable = ProductType(rawValue: "Non-Consumable")
    /// Used up; may be bought again.
    public static let consumable = ProductType(rawValue: "Consumable")
    /// A fixed period that does not renew by itself.
    public static let nonRenewing = ProductType(rawValue: "Non-Renewing Subscription")
}

/// Whether the purchaser bought the product or received it through Family Sharing (`inAppOwnershipType`).
public typealias OwnershipType = OpenValue<OwnershipTypeTag, String>
/// Tells `OwnershipType` apart from the other open vocabularies.
public enum OwnershipTypeTag {}

extension OwnershipType {
    /// Bought by this Apple account.
    public static let purchased = OwnershipType(rawValue: "PURCHASED")
    /// Shared by a family member; Apple sends REVOKE when sharing stops.
    public static let familyShared = OwnershipType(rawValue: "FAMILY_SHARED")
}

/// Why a revoked transaction lost its access, from Apple's `revocationReason` and `revocationType`: the Swift statement
/// of SQL's `bouncer_revocation_kind` (webhook events), run against it case by case in `RuleTableTests`.
public enum RevocationKind: String, Sendable, Equatable, CaseIterable {
    /// Apple refunded it: a `revocationReason` was given, or a refund `revocationType` (full or prorated).
    case refunded
    /// Apple withdrew it without a refund: Family Sharing stopped (`FAMILY_REVOKE`), or neither a reason nor a type
    /// (an upgrade to another product of the group).
    case revoked

    /// The kind of a revocation with this reason and type.
    public init(reason: Int?, type: RevocationType?) {
        if type == .familyRevoke {
            self = .revoked
        } else if reason != nil || type == .refundFull || type == .refundProrated {
            self = .refunded
        } else {
            self = .revoked
        }
    }
}

/// How a refund or revocation applied (`revocationType`, December 2025). Unknown values are kept.
public typealias RevocationType = OpenValue<RevocationTypeTag, String>
/// Tells `RevocationType` apart from the other open vocabularies.
public enum RevocationTypeTag {}

extension RevocationType {
    /// The whole price was refunded: access ends at `revocationDate`.
    public static let refundFull = RevocationType(rawValue: "REFUND_FULL")
    /// Part of the price was refunded (`revocationPercentage`): the customer keeps access.
    public static let refundProrated = RevocationType(rawValue: "REFUND_PRORATED")
    /// Family Sharing access was withdrawn: access ends at `revocationDate`.
    public static let familyRevoke = RevocationType(rawValue: "FAMILY_REVOKE")
}

/// The payment mode of an offer (`offerDiscountType`). Unknown values are kept.
public typealias OfferDiscountType = OpenValue<OfferDiscountTypeTag, String>
/// Tells `OfferDiscountType` apart from the other open vocabularies.
public enum OfferDiscountTypeTag {}

extension OfferDiscountType {
    /// Free trial.
    public static let freeTrial = OfferDiscountType(rawValue: "FREE_TRIAL")
    /// Pay as you go.
    public static let payAsYouGo = OfferDiscountType(rawValue: "PAY_AS_YOU_GO")
    /// Pay up front.
    public static let payUpFront = OfferDiscountType(rawValue: "PAY_UP_FRONT")
    /// One-time payment (In-App Purchase offer codes, October 2025).
    public static let oneTime = OfferDiscountType(rawValue: "ONE_TIME")
}

/// An App Store Server Notifications V2 `notificationType`. Unknown values are kept (and counted as `unknown` in
/// metrics: Xcode-signed data can carry any string).
public typealias NotificationType = OpenValue<NotificationTypeTag, String>
/// Tells `NotificationType` apart from the other open vocabularies.
public enum NotificationTypeTag {}

extension NotificationType {
    /// A customer subscribed (INITIAL_BUY) or resubscribed (RESUBSCRIBE).
    public static let subscribed = NotificationType(rawValue: "SUBSCRIBED")
    /// A subscription renewed (BILLING_RECOVERY after a failed charge).
    public static let didRenew = NotificationType(rawValue: "DID_RENEW")
    /// The customer changed the next renewal's product (UPGRADE, DOWNGRADE, or none: a change reverted).
    public static let didChangeRenewalPref = NotificationType(rawValue: "DID_CHANGE_RENEWAL_PREF")
    /// Auto-renew was turned on or off (AUTO_RENEW_ENABLED, AUTO_RENEW_DISABLED).
    public static let didChangeRenewalStatus = NotificationType(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    /// An offer was redeemed on an active subscription (UPGRADE, DOWNGRADE, or none).
    public static let offerRedeemed = NotificationType(rawValue: "OFFER_REDEEMED")
    /// A renewal charge failed (GRACE_PERIOD, or none: billing retry).
    public static let didFailToRenew = NotificationType(rawValue: "DID_FAIL_TO_RENEW")
    /// The billing grace period ended.
    public static let gracePeriodExpired = NotificationType(rawValue: "GRACE_PERIOD_EXPIRED")
    /// A subscription expired (VOLUNTARY, BILLING_RETRY, PRICE_INCREASE, PRODUCT_NOT_FOR_SALE).
    public static let expired = NotificationType(rawValue: "EXPIRED")
    /// Apple refunded a transaction.
    public static let refund = NotificationType(rawValue: "REFUND")
    /// Apple declined a refund request.
    public static let refundDeclined = NotificationType(rawValue: "REFUND_DECLINED")
    /// Apple reversed a refund.
    public static let refundReversed = NotificationType(rawValue: "REFUND_REVERSED")
    /// Family Sharing access ended.
    public static let revoke = NotificationType(rawValue: "REVOKE")
    /// One subscription's renewal date was extended.
    public static let renewalExtended = NotificationType(rawValue: "RENEWAL_EXTENDED")
    /// A mass renewal-date extension finished (SUMMARY) or failed for one subscription (FAILURE).
    public static let renewalExtension = NotificationType(rawValue: "RENEWAL_EXTENSION")
    /// A price increase needs consent (PENDING) or was accepted (ACCEPTED).
    public static let priceIncrease = NotificationType(rawValue: "PRICE_INCREASE")
    /// Apple asks for consumption data about a refund request.
    public static let consumptionRequest = NotificationType(rawValue: "CONSUMPTION_REQUEST")
    /// A consumable, non-consumable or non-renewing purchase (production since May 2025).
    public static let oneTimeCharge = NotificationType(rawValue: "ONE_TIME_CHARGE")
    /// Sent on request by the App Store Server API.
    public static let test = NotificationType(rawValue: "TEST")
    /// External Purchase tokens (UNREPORTED, CREATED, ACTIVE_TOKEN_REMINDER).
    public static let externalPurchaseToken = NotificationType(rawValue: "EXTERNAL_PURCHASE_TOKEN")
    /// A parent or guardian withdrew consent for the app (November 2025); Apple stops it from launching.
    public static let rescindConsent = NotificationType(rawValue: "RESCIND_CONSENT")
    /// Advanced Commerce: a subscription's metadata changed (March 2025).
    public static let metadataUpdate = NotificationType(rawValue: "METADATA_UPDATE")
    /// Advanced Commerce: a subscription migrated to Advanced Commerce SKUs (March 2025; the changelog says MIGRATE,
    /// the payloads and Apple's libraries say MIGRATION).
    public static let migration = NotificationType(rawValue: "MIGRATION")
    /// Advanced Commerce: a subscription's price changed.
    public static let priceChange = NotificationType(rawValue: "PRICE_CHANGE")

    /// Every `notificationType` in Apple's documentation (checked against the changelog up to April 2026).
    public static let documented: [NotificationType] = [
        .subscribed, .didChangeRenewalPref, .didChangeRenewalStatus, .offerRedeemed, .didRenew, .expired,
        .didFailToRenew, .gracePeriodExpired, .priceIncrease, .refund, .refundDeclined, .consumptionRequest,
        .renewalExtended, .revoke, .test, .renewalExtension, .refundReversed, .externalPurchaseToken, .oneTimeCharge,
        .rescindConsent, .metadataUpdate, .migration, .priceChange,
    ]
    private static let documentedSet = Set(documented)
    /// Whether this is one of `documented`.
    public var isDocumented: Bool { Self.documentedSet.contains(self) }
}

/// An App Store Server Notifications V2 `subtype`. Unknown values are kept.
public typealias NotificationSubtype = OpenValue<NotificationSubtypeTag, String>
/// Tells `NotificationSubtype` apart from the other open vocabularies.
public enum NotificationSubtypeTag {}

extension NotificationSubtype {
    /// SUBSCRIBED, OFFER_REDEEMED: a first purchase in the group.
    public static let initialBuy = NotificationSubtype(rawValue: "INITIAL_BUY")
    /// SUBSCRIBED: a purchase in a group the customer had left.
    public static let resubscribe = NotificationSubtype(rawValue: "RESUBSCRIBE")
    /// DID_CHANGE_RENEWAL_PREF, OFFER_REDEEMED: a downgrade at the next renewal.
    public static let downgrade = NotificationSubtype(rawValue: "DOWNGRADE")
    /// DID_CHANGE_RENEWAL_PREF, OFFER_REDEEMED: an upgrade, effective now.
    public static let upgrade = NotificationSubtype(rawValue: "UPGRADE")
    /// DID_CHANGE_RENEWAL_STATUS.
    public static let autoRenewEnabled = NotificationSubtype(rawValue: "AUTO_RENEW_ENABLED")
    /// DID_CHANGE_RENEWAL_STATUS.
    public static let autoRenewDisabled = NotificationSubtype(rawValue: "AUTO_RENEW_DISABLED")
    /// EXPIRED: the customer turned renewal off.
    public static let voluntary = NotificationSubtype(rawValue: "VOLUNTARY")
    /// EXPIRED: billing retry ended without a charge.
    public static let billingRetry = NotificationSubtype(rawValue: "BILLING_RETRY")
    /// EXPIRED (no consent to a price increase), PRICE_INCREASE is a type too.
    public static let priceIncrease = NotificationSubtype(rawValue: "PRICE_INCREASE")
    /// DID_FAIL_TO_RENEW: access continues through the grace period.
    public static let gracePeriod = NotificationSubtype(rawValue: "GRACE_PERIOD")
    /// PRICE_INCREASE: waiting for the customer's consent.
    public static let pending = NotificationSubtype(rawValue: "PENDING")
    /// PRICE_INCREASE: consented, or no consent was needed.
    public static let accepted = NotificationSubtype(rawValue: "ACCEPTED")
    /// DID_RENEW: a renewal after failed charges.
    public static let billingRecovery = NotificationSubtype(rawValue: "BILLING_RECOVERY")
    /// EXPIRED: the product was not for sale at renewal.
    public static let productNotForSale = NotificationSubtype(rawValue: "PRODUCT_NOT_FOR_SALE")
    /// RENEWAL_EXTENSION: a mass extension finished.
    public static let summary = NotificationSubtype(rawValue: "SUMMARY")
    /// RENEWAL_EXTENSION: one subscription could not be extended.
    public static let failure = NotificationSubtype(rawValue: "FAILURE")
    /// EXTERNAL_PURCHASE_TOKEN: a token was not reported in time.
    public static let unreported = NotificationSubtype(rawValue: "UNREPORTED")
    /// EXTERNAL_PURCHASE_TOKEN: Apple created a custom link token (June 2025).
    public static let created = NotificationSubtype(rawValue: "CREATED")
    /// EXTERNAL_PURCHASE_TOKEN: a monthly reminder that a custom link token is still active (June 2025).
    public static let activeTokenReminder = NotificationSubtype(rawValue: "ACTIVE_TOKEN_REMINDER")

    /// Every `subtype` in Apple's documentation (checked against the changelog up to April 2026).
    public static let documented: [NotificationSubtype] = [
        .initialBuy, .resubscribe, .downgrade, .upgrade, .autoRenewEnabled, .autoRenewDisabled, .voluntary,
        .billingRetry, .priceIncrease, .gracePeriod, .pending, .accepted, .billingRecovery, .productNotForSale,
        .summary, .failure, .unreported, .created, .activeTokenReminder,
    ]
    private static let documentedSet = Set(documented)
    /// Whether this is one of `documented`.
    public var isDocumented: Bool { Self.documentedSet.contains(self) }
}

/// What happens when a purchase already bound to one user is posted for another (a restore on another account).
public enum TransferPolicy: String, Sendable, CaseIterable {
    /// The new user gets it; previous owners lose it; the move is recorded. The default.
    case transfer
    /// Everyone who posted it keeps it.
    case share
    /// The first owner keeps it; the request is refused.
    case block
}

/// The public answer to "is this entitled?", as the API spells it.
public enum EntitlementStatus: String, Sendable, CaseIterable {
    /// Entitled now.
    case active
    /// Was entitled; the period (and any grace period) has ended.
    case expired
    /// Refunded or revoked by Apple (or by an upgrade).
    case revoked
    /// Nothing known for this user.
    case none
}
