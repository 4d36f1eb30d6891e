public import Foundation

/// The verified facts of one signed transaction (`JWSTransactionDecodedPayload`), as Bouncer stores them.
///
/// Only a verifier produces these, after checking the signature, chain and claims.
public struct TransactionFacts: Sendable, Equatable {
    /// Unique per transaction (a purchase, a renewal, a restore).
    public var transactionId: String
    /// The first transaction of the purchase; renewals share it. Subscriptions are keyed by it.
    public var originalTransactionId: String
    /// The product bought.
    public var productId: String
    /// Subscription, consumable, …
    public var type: ProductType
    /// Where it was signed.
    public var environment: StoreEnvironment
    /// When this transaction was charged (for renewals, the start of the period).
    public var purchaseDate: Date
    /// When the original transaction was charged.
    public var originalPurchaseDate: Date?
    /// End of the period, for subscriptions.
    public var expiresDate: Date?
    /// Set when Apple refunded or revoked the transaction.
    public var revocationDate: Date?
    /// Apple's revocation reason (0: other, 1: app issue); raw to keep unknown values.
    public var revocationReason: Int?
    /// The UUID the app attached to the purchase, if any.
    public var appAccountToken: UUID?
    /// Purchased or family shared.
    public var ownershipType: OwnershipType?
    /// When Apple signed this statement of facts: newer statements about the same transaction win.
    public var signedDate: Date
    /// The app the transaction is for, as signed; `nil` means the project's (the verifier has checked they match).
    /// With `originalTransactionId`, `productId` and `environment`, an identity field that never changes.
    public var bundleId: String?
    /// Whether the user upgraded to another subscription (this one then ends).
    public var isUpgraded: Bool
    /// The verified payload exactly as signed (JSON text), kept as the audit record.
    public var payloadJSON: String
    /// The app download this purchase belongs to (`appTransactionId`, 2025).
    public var appTransactionId: String?
    /// ISO 8601 duration of the redeemed offer (`offerPeriod`, 2025).
    public var offerPeriod: String?
    /// Payment mode of the redeemed offer.
    public var offerDiscountType: OfferDiscountType?
    /// How a refund or revocation applied (`revocationType`, December 2025).
    public var revocationType: RevocationType?
    /// The refunded share in thousandths of a percent (100000 = 100%) (`revocationPercentage`).
    public var revocationPercentage: Int64?
    /// Advanced Commerce API data (`advancedCommerceInfo`) as JSON text, when present.
    public var advancedCommerceInfoJSON: String?
    /// The compact JWS these facts were verified from, kept as the evidence an export carries (`nil` for a
    /// StoreKit 1 receipt's in-app record, which has no per-transaction signature).
    public var signedJWS: String?

    /// Creates a fact record.
    public init(
        transactionId: String, originalTransactionId: String, productId: String, type: ProductType,
        environment: StoreEnvironment, purchaseDate: Date, originalPurchaseDate: Date? = nil, expiresDate: Date? = nil,
        revocationDate: Date? = nil, revocationReason: Int? = nil, appAccountToken: UUID? = nil,
        ownershipType: OwnershipType? = nil, signedDate: Date, bundleId: String? = nil, isUpgraded: Bool = false,
        payloadJSON: String, appTransactionId: String? = nil, offerPeriod: String? = nil,
        offerDiscountType: OfferDiscountType? = nil, revocationType: RevocationType? = nil,
        revocationPercentage: Int64? = nil, advancedCommerceInfoJSON: String? = nil
    ) {
        self.appTransactionId = appTransactionId
        self.offerPeriod = offerPeriod
        self.offerDiscountType = offerDiscountType
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.advancedCommerceInfoJSON = advancedCommerceInfoJSON
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.type = type
        self.environment = environment
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.appAccountToken = appAccountToken
        self.ownershipType = ownershipType
        self.signedDate = signedDate
        self.bundleId = bundleId
        self.isUpgraded = isUpgraded
        self.payloadJSON = payloadJSON
    }
}

extension TransactionFacts {
    /// Whether this is a partial (prorated) refund: Apple refunded part of the price and the customer keeps access.
    public var isPartialRefund: Bool { revocationType == .refundProrated }

    /// When access ends because of a refund or revocation: `revocationDate`, except for a partial refund, which
    /// keeps the entitlement (Apple revokes with a full refund or FAMILY_REVOKE, each its own signed transaction).
    /// The store records this as the purchase's revocation; the signed payload keeps Apple's own date.
    public var accessRevocationDate: Date? { isPartialRefund ? nil : revocationDate }
}

/// The verified facts of one signed renewal info (`JWSRenewalInfoDecodedPayload`).
public struct RenewalFacts: Sendable, Equatable {
    /// The purchase this renewal info describes.
    public var originalTransactionId: String
    /// The product currently subscribed to.
    public var productId: String?
    /// The product that will renew next (differs after a downgrade).
    public var autoRenewProductId: String?
    /// 1 when the subscription will renew, 0 when the user turned renewal off.
    public var autoRenewStatus: Int?
    /// Why the subscription expired (1 cancelled, 2 billing error, …).
    public var expirationIntent: Int?
    /// End of the billing grace period, while Apple retries a failed charge with access kept.
    public var gracePeriodExpiresDate: Date?
    /// Whether Apple is retrying a failed renewal charge.
    public var isInBillingRetryPeriod: Bool?
    /// Price-increase consent (0 not responded, 1 consented).
    public var priceIncreaseStatus: Int?
    /// Offer type of the next renewal.
    public var offerType: Int?
    /// Offer identifier of the next renewal.
    public var offerIdentifier: String?
    /// When the next renewal happens.
    public var renewalDate: Date?
    /// Where it was signed.
    public var environment: StoreEnvironment
    /// When Apple signed it: newer renewal info wins.
    public var signedDate: Date
    /// The verified payload exactly as signed (JSON text).
    public var payloadJSON: String
    /// The app download this subscription belongs to (`appTransactionId`, 2025).
    public var appTransactionId: String?
    /// ISO 8601 duration of the renewal's offer (`offerPeriod`, 2025).
    public var offerPeriod: String?
    /// Payment mode of the renewal's offer.
    public var offerDiscountType: OfferDiscountType?
    /// Advanced Commerce API data (`advancedCommerceInfo`) as JSON text, when present.
    public var advancedCommerceInfoJSON: String?
    /// Win-back offers the customer may redeem, best first (`eligibleWinBackOfferIds`; empty when absent).
    public var eligibleWinBackOfferIds: [String]

    /// Creates a fact record.
    public init(
        originalTransactionId: String, productId: String? = nil, autoRenewProductId: String? = nil,
        autoRenewStatus: Int? = nil, expirationIntent: Int? = nil, gracePeriodExpiresDate: Date? = nil,
        isInBillingRetryPeriod: Bool? = nil, priceIncreaseStatus: Int? = nil, offerType: Int? = nil,
        offerIdentifier: String? = nil, renewalDate: Date? = nil, environment: StoreEnvironment, signedDate: Date,
        payloadJSON: String, appTransactionId: String? = nil, offerPeriod: String? = nil,
        offerDiscountType: OfferDiscountType? = nil, advancedCommerceInfoJSON: String? = nil,
        eligibleWinBackOfferIds: [String] = []
    ) {
        self.appTransactionId = appTransactionId
        self.offerPeriod = offerPeriod
        self.offerDiscountType = offerDiscountType
        self.advancedCommerceInfoJSON = advancedCommerceInfoJSON
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.expirationIntent = expirationIntent
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.priceIncreaseStatus = priceIncreaseStatus
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.renewalDate = renewalDate
        self.environment = environment
        self.signedDate = signedDate
        self.payloadJSON = payloadJSON
    }
}
