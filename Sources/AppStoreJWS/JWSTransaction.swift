public import Domain
public import Foundation
public import JSON

/// A decoded `signedTransactionInfo` (JWSTransactionDecodedPayload). Money is in milliunits.
public struct JWSTransaction: Sendable, Equatable {
    /// Unique id of this transaction.
    public var transactionId: String
    /// Id of the original purchase (stable across renewals and restores).
    public var originalTransactionId: String
    /// Id of a subscription purchase event across devices.
    public var webOrderLineItemId: String?
    /// The app's bundle identifier (checked against the policy).
    public var bundleId: String
    /// The product identifier.
    public var productId: String
    /// Subscription group of an auto-renewable subscription.
    public var subscriptionGroupIdentifier: String?
    /// When the App Store charged (or restored) this transaction.
    public var purchaseDate: Date
    /// Purchase date of the original transaction.
    public var originalPurchaseDate: Date?
    /// When a subscription expires or renews.
    public var expiresDate: Date?
    /// Number of consumables purchased.
    public var quantity: Int64?
    /// The product type.
    public var type: ProductType
    /// UUID the app associated with the customer.
    public var appAccountToken: String?
    /// Purchased or family-shared.
    public var inAppOwnershipType: InAppOwnershipType?
    /// When the App Store signed this JWS (the effective date for certificate validity).
    public var signedDate: Date
    /// Why a refund or revocation happened.
    public var revocationReason: RevocationReason?
    /// When Apple refunded or revoked the transaction.
    public var revocationDate: Date?
    /// Whether the customer upgraded to another subscription.
    public var isUpgraded: Bool?
    /// The kind of offer redeemed.
    public var offerType: OfferType?
    /// The offer's identifier (promotional offer id or offer code reference name).
    public var offerIdentifier: String?
    /// The environment that signed it.
    public var environment: AppStoreEnvironment
    /// ISO 3166-1 alpha-3 storefront country code.
    public var storefront: String?
    /// Apple's storefront id.
    public var storefrontId: String?
    /// Purchase or renewal.
    public var transactionReason: TransactionReason?
    /// ISO 4217 currency code of `price`.
    public var currency: String?
    /// Price in milliunits of `currency`.
    public var price: Int64?
    /// Payment mode of the offer.
    public var offerDiscountType: OfferDiscountType?
    /// Id of the app transaction (app download) this belongs to.
    public var appTransactionId: String?
    /// ISO 8601 duration of the offer.
    public var offerPeriod: String?
    /// How a refund or revocation applied.
    public var revocationType: RevocationType?
    /// Refunded share in milliunits of a percent (100000 = 100%).
    public var revocationPercentage: Int64?
    /// Advanced Commerce API data, passed through.
    public var advancedCommerceInfo: JSONValue?
    /// Billing plan of the purchase.
    public var billingPlanType: BillingPlanType?
    /// Commitment data (newer), passed through.
    public var commitmentInfo: JSONValue?
    /// The original transaction this one replaced (Advanced Commerce migrations, March 2025).
    public var previousOriginalTransactionId: String?

    /// Decodes a transaction; the fields the brief lists as required are errors when missing.
    init(_ reader: PayloadReader) throws(VerificationError) {
        transactionId = try reader.requiredString("transactionId")
        originalTransactionId = try reader.requiredString("originalTransactionId")
        webOrderLineItemId = try reader.string("webOrderLineItemId")
        bundleId = try reader.requiredString("bundleId")
        productId = try reader.requiredString("productId")
        subscriptionGroupIdentifier = try reader.string("subscriptionGroupIdentifier")
        purchaseDate = try reader.requiredDate("purchaseDate")
        originalPurchaseDate = try reader.date("originalPurchaseDate")
        expiresDate = try reader.date("expiresDate")
        quantity = try reader.int64("quantity")
        type = ProductType(rawValue: try reader.requiredString("type"))
        appAccountToken = try reader.string("appAccountToken")
        inAppOwnershipType = try reader.string("inAppOwnershipType").map(InAppOwnershipType.init(rawValue:))
        signedDate = try reader.requiredDate("signedDate")
        revocationReason = try reader.int64("revocationReason").map(RevocationReason.init(rawValue:))
        revocationDate = try reader.date("revocationDate")
        isUpgraded = try reader.bool("isUpgraded")
        offerType = try reader.int64("offerType").map(OfferType.init(rawValue:))
        offerIdentifier = try reader.string("offerIdentifier")
        environment = AppStoreEnvironment(rawValue: try reader.requiredString("environment"))
        storefront = try reader.string("storefront")
        storefrontId = try reader.string("storefrontId")
        transactionReason = try reader.string("transactionReason").map(TransactionReason.init(rawValue:))
        currency = try reader.string("currency")
        price = try reader.int64("price")
        offerDiscountType = try reader.string("offerDiscountType").map(OfferDiscountType.init(rawValue:))
        appTransactionId = try reader.string("appTransactionId")
        offerPeriod = try reader.string("offerPeriod")
        revocationType = try reader.string("revocationType").map(RevocationType.init(rawValue:))
        revocationPercentage = try reader.int64("revocationPercentage")
        advancedCommerceInfo = reader.raw("advancedCommerceInfo")
        billingPlanType = try reader.string("billingPlanType").map(BillingPlanType.init(rawValue:))
        commitmentInfo = reader.raw("commitmentInfo")
        previousOriginalTransactionId = try reader.string("previousOriginalTransactionId")
    }
}

/// A decoded `signedRenewalInfo` (JWSRenewalInfoDecodedPayload). It carries no bundleId.
public struct JWSRenewalInfo: Sendable, Equatable {
    /// Why the subscription expired.
    public var expirationIntent: ExpirationIntent?
    /// Original transaction id of the subscription.
    public var originalTransactionId: String?
    /// Product that renews next.
    public var autoRenewProductId: String?
    /// Current product.
    public var productId: String?
    /// Whether the subscription renews.
    public var autoRenewStatus: AutoRenewStatus?
    /// Whether Apple is retrying billing.
    public var isInBillingRetryPeriod: Bool?
    /// Price-increase consent status.
    public var priceIncreaseStatus: PriceIncreaseStatus?
    /// End of the billing grace period.
    public var gracePeriodExpiresDate: Date?
    /// Offer applied at renewal.
    public var offerType: OfferType?
    /// Offer identifier applied at renewal.
    public var offerIdentifier: String?
    /// When the App Store signed this JWS (required: the effective date).
    public var signedDate: Date
    /// The environment that signed it (the only claim checked).
    public var environment: AppStoreEnvironment
    /// Start of the current run of continuous subscription (lapses under 60 days ignored).
    public var recentSubscriptionStartDate: Date?
    /// Next renewal date.
    public var renewalDate: Date?
    /// ISO 4217 currency of `renewalPrice`.
    public var currency: String?
    /// Renewal price in milliunits.
    public var renewalPrice: Int64?
    /// Payment mode of the renewal offer.
    public var offerDiscountType: OfferDiscountType?
    /// Win-back offers the customer is eligible for, best first (at most `maxWinBackOffers`).
    public var eligibleWinBackOfferIds: [String]?
    /// The most win-back offer ids a payload may list. Apple documents no limit; a subscription group has a handful
    /// of win-back offers, so 100 only stops a hostile list from growing every row and answer that shows it.
    public static let maxWinBackOffers = 100
    /// The longest offer identifier accepted, in UTF-8 bytes (App Store Connect's are short reference codes).
    public static let maxOfferIdentifierBytes = 256
    /// UUID the app associated with the customer.
    public var appAccountToken: String?
    /// Id of the app transaction.
    public var appTransactionId: String?
    /// ISO 8601 duration of the offer.
    public var offerPeriod: String?
    /// Advanced Commerce API data, passed through.
    public var advancedCommerceInfo: JSONValue?
    /// Billing plan at renewal.
    public var renewalBillingPlanType: BillingPlanType?
    /// Commitment data (newer), passed through.
    public var commitmentInfo: JSONValue?

    init(_ reader: PayloadReader) throws(VerificationError) {
        expirationIntent = try reader.int64("expirationIntent").map(ExpirationIntent.init(rawValue:))
        originalTransactionId = try reader.string("originalTransactionId")
        autoRenewProductId = try reader.string("autoRenewProductId")
        productId = try reader.string("productId")
        autoRenewStatus = try reader.int64("autoRenewStatus").map(AutoRenewStatus.init(rawValue:))
        isInBillingRetryPeriod = try reader.bool("isInBillingRetryPeriod")
        priceIncreaseStatus = try reader.int64("priceIncreaseStatus").map(PriceIncreaseStatus.init(rawValue:))
        gracePeriodExpiresDate = try reader.date("gracePeriodExpiresDate")
        offerType = try reader.int64("offerType").map(OfferType.init(rawValue:))
        offerIdentifier = try reader.string("offerIdentifier")
        signedDate = try reader.requiredDate("signedDate")
        environment = AppStoreEnvironment(rawValue: try reader.requiredString("environment"))
        recentSubscriptionStartDate = try reader.date("recentSubscriptionStartDate")
        renewalDate = try reader.date("renewalDate")
        currency = try reader.string("currency")
        renewalPrice = try reader.int64("renewalPrice")
        offerDiscountType = try reader.string("offerDiscountType").map(OfferDiscountType.init(rawValue:))
        eligibleWinBackOfferIds = try reader.boundedStrings(
            "eligibleWinBackOfferIds", maxCount: Self.maxWinBackOffers, maxBytes: Self.maxOfferIdentifierBytes)
        appAccountToken = try reader.string("appAccountToken")
        appTransactionId = try reader.string("appTransactionId")
        offerPeriod = try reader.string("offerPeriod")
        advancedCommerceInfo = reader.raw("advancedCommerceInfo")
        renewalBillingPlanType = try reader.string("renewalBillingPlanType").map(BillingPlanType.init(rawValue:))
        commitmentInfo = reader.raw("commitmentInfo")
    }
}

/// A decoded app transaction (`signedAppTransactionInfo`, StoreKit `AppTransaction.jwsRepresentation`).
public struct AppTransaction: Sendable, Equatable {
    /// The environment (`receiptType` plays the role of `environment`).
    public var receiptType: AppStoreEnvironment
    /// App Store app id (absent in Sandbox and Xcode).
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String
    /// App version the transaction was created for.
    public var applicationVersion: String?
    /// Version id of the app in App Store Connect.
    public var versionExternalIdentifier: Int64?
    /// When the app receipt was created (required: the effective date).
    public var receiptCreationDate: Date
    /// When the customer first got the app (may be year 1 in Xcode data).
    public var originalPurchaseDate: Date?
    /// The app version originally purchased.
    public var originalApplicationVersion: String?
    /// Device verification value (base64).
    public var deviceVerification: String?
    /// Nonce for `deviceVerification`.
    public var deviceVerificationNonce: String?
    /// When the customer pre-ordered the app.
    public var preorderDate: Date?
    /// Unique id of this app download.
    public var appTransactionId: String?
    /// Platform of the original purchase.
    public var originalPlatform: OriginalPlatform?

    init(_ reader: PayloadReader) throws(VerificationError) {
        receiptType = AppStoreEnvironment(rawValue: try reader.requiredString("receiptType"))
        appAppleId = try reader.int64("appAppleId")
        bundleId = try reader.requiredString("bundleId")
        applicationVersion = try reader.string("applicationVersion")
        versionExternalIdentifier = try reader.int64("versionExternalIdentifier")
        receiptCreationDate = try reader.requiredDate("receiptCreationDate")
        originalPurchaseDate = try reader.date("originalPurchaseDate")
        originalApplicationVersion = try reader.string("originalApplicationVersion")
        deviceVerification = try reader.string("deviceVerification")
        deviceVerificationNonce = try reader.string("deviceVerificationNonce")
        preorderDate = try reader.date("preorderDate")
        appTransactionId = try reader.string("appTransactionId")
        originalPlatform = try reader.string("originalPlatform").map(OriginalPlatform.init(rawValue:))
    }
}
