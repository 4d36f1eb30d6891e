public import Foundation

// The JSON answers of Bouncer's public API (see openapi.yaml), decoded with snake_case keys and ISO 8601 dates.
// Enumerations that Bouncer may grow (statuses, environments) are string wrappers, so a newer server never breaks
// an older app.

/// A string enumeration Bouncer may grow: the wire value wrapped, coded as a single JSON string and described by it,
/// so a value added by a newer server reads as itself instead of failing to decode.
public protocol OpenStringValue: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible
where RawValue == String {
    /// A value, known or not.
    init(rawValue: String)
}

extension OpenStringValue {
    /// `try container.decode(String.self)` wrapped.
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    /// Encodes the wire value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// The wire value.
    public var description: String { rawValue }
}

/// A purchase's or user's status (`active`, `expired`, `revoked`, `none`, or a value added later).
public struct PurchaseStatus: OpenStringValue {
    /// The wire value.
    public var rawValue: String
    /// A status.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Grants its entitlements now.
    public static let active = PurchaseStatus(rawValue: "active")
    /// Ended without renewal.
    public static let expired = PurchaseStatus(rawValue: "expired")
    /// Refunded or revoked by Apple.
    public static let revoked = PurchaseStatus(rawValue: "revoked")
    /// The user has no purchase (users), or a receipt holds no in-app record.
    public static let none = PurchaseStatus(rawValue: "none")
}

/// Apple's environment of a purchase (`Production`, `Sandbox`, or a value added later).
public struct StoreEnvironment: OpenStringValue {
    /// The wire value.
    public var rawValue: String
    /// An environment.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The App Store.
    public static let production = StoreEnvironment(rawValue: "Production")
    /// TestFlight and sandbox accounts.
    public static let sandbox = StoreEnvironment(rawValue: "Sandbox")
}

/// The 201 of `POST /v1/receipts/:public_key`: what the posted purchase grants now.
public struct ReceiptResult: Codable, Hashable, Sendable {
    /// Always `true` on success (refusals are errors).
    public var valid: Bool
    /// The posted (or most recent) transaction; `nil` only for a StoreKit 1 receipt without in-app records.
    public var transactionId: String?
    /// The purchase's first transaction id.
    public var originalTransactionId: String?
    /// The App Store product id.
    public var productId: String?
    /// What the purchase grants now (for a StoreKit 1 receipt: the whole receipt); empty unless active.
    public var entitlements: [String]
    /// When the subscription period ends; `nil` for non-expiring purchases.
    public var expiresDate: Date?
    /// The purchase's status now.
    public var status: PurchaseStatus
    /// Where Apple recorded the purchase.
    public var environment: StoreEnvironment?
    /// The user the purchase is bound to, for projects with an `app_account_token_policy` other than `ignore`.
    public var userId: String?
    /// Where `userId` came from (`request` or `app_account_token`), with `userId`.
    public var userIdSource: String?
    /// StoreKit 1 receipts only: every in-app record of the receipt, in receipt order.
    public var transactions: [ReceiptTransaction]?
    /// A signed entitlement token, when the project enables tokens and a user id was posted.
    public var entitlementToken: String?
}

/// One in-app record of a StoreKit 1 receipt.
public struct ReceiptTransaction: Codable, Hashable, Sendable {
    /// The record's transaction id.
    public var transactionId: String
    /// Its purchase's first transaction id.
    public var originalTransactionId: String
    /// The App Store product id.
    public var productId: String
    /// When it was bought.
    public var purchaseDate: Date?
    /// When its period ends.
    public var expiresDate: Date?
    /// Its own status now.
    public var status: PurchaseStatus
}

/// The 201 of `POST /v1/app-transactions/:public_key`: a verified app purchase and what it grants.
public struct AppTransactionResult: Codable, Hashable, Sendable {
    /// Apple's `appTransactionId`: one per Apple account and app.
    public var appTransactionId: String
    /// The app's bundle id.
    public var bundleId: String
    /// Where Apple recorded it.
    public var environment: StoreEnvironment
    /// The app version first bought or downloaded.
    public var originalApplicationVersion: String?
    /// When the app was first bought or downloaded.
    public var originalPurchaseDate: Date?
    /// What the app purchase grants under the project's `app_purchase_entitlements`.
    public var entitlements: [String]
    /// When Family Sharing consent was rescinded, if it was.
    public var consentRescindedAt: Date?
}

/// The 200 of `GET /v1/subscriptions/:public_key/:user_id`: what a user is entitled to now.
public struct UserSubscriptions: Codable, Hashable, Sendable {
    /// The user id asked for.
    public var userId: String
    /// The user's overall status (`none` without purchases).
    public var status: PurchaseStatus
    /// Everything the user is entitled to now.
    public var entitlements: [String]
    /// Each purchase of the user.
    public var subscriptions: [Subscription]
    /// The user's app purchases (paid apps), present only when there are some.
    public var appPurchases: [AppPurchase]?
    /// With `appPurchases`: whether Family Sharing consent was rescinded.
    public var consentRescinded: Bool?
    /// With `appPurchases`: when consent was rescinded.
    public var consentRescindedAt: Date?
}

/// One purchase of a user, with its state now.
public struct Subscription: Codable, Hashable, Sendable {
    /// The App Store product id.
    public var productId: String
    /// Its status now.
    public var status: PurchaseStatus
    /// When the current period ends.
    public var currentPeriodEnd: Date?
    /// Whether it renews at the end of the period.
    public var autoRenewEnabled: Bool
    /// The purchase's first transaction id.
    public var originalTransactionId: String
    /// Where Apple recorded it.
    public var environment: StoreEnvironment
    /// What it grants now (empty unless active).
    public var entitlements: [String]
    /// In Apple's billing grace period (still active).
    public var inGracePeriod: Bool
    /// Apple is retrying the payment.
    public var inBillingRetry: Bool
    /// When the grace period ends.
    public var gracePeriodExpiresDate: Date?
    /// Apple's expiration intent (1 cancelled, 2 billing error, …).
    public var expirationIntent: Int?
    /// The product it renews into.
    public var autoRenewProductId: String?
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var ownershipType: String?
    /// When Apple revoked it.
    public var revocationDate: Date?
    /// `REFUND_FULL`, `REFUND_PRORATED`, … when revoked.
    public var revocationType: String?
    /// Refunded share in thousandths of a percent, for prorated refunds.
    public var revocationPercentage: Int?
    /// A prorated refund: the entitlement is kept.
    public var partialRefund: Bool?
}

/// A paid-app purchase of a user, from `POST /v1/app-transactions`.
public struct AppPurchase: Codable, Hashable, Sendable {
    /// Always `app_purchase`.
    public var source: String
    /// Apple's `appTransactionId`.
    public var appTransactionId: String
    /// Where Apple recorded it.
    public var environment: StoreEnvironment
    /// The app version first bought or downloaded.
    public var originalApplicationVersion: String?
    /// When the app was first bought or downloaded.
    public var originalPurchaseDate: Date?
    /// What it grants.
    public var entitlements: [String]
    /// When Family Sharing consent was rescinded, if it was.
    public var consentRescindedAt: Date?
}

/// The 200 of `GET /v1/subscriptions/:public_key/:user_id/token`: a signed token of the user's entitlements,
/// verifiable with `/.well-known/jwks.json`.
public struct EntitlementToken: Codable, Hashable, Sendable {
    /// The compact ES256 JWS.
    public var token: String
    /// When it expires (its `exp`).
    public var expiresAt: Date
}

/// A legacy promotional-offer signature for StoreKit's `Product.PurchaseOption.promotionalOffer(offerID:keyID:
/// nonce:signature:timestamp:)`.
public struct LegacyOfferSignature: Codable, Hashable, Sendable {
    /// The In-App Purchase key id.
    public var keyId: String
    /// The nonce (a lowercase UUID) that was signed.
    public var nonce: String
    /// Milliseconds since 1970 that were signed.
    public var timestamp: Int64
    /// Base64 ECDSA signature.
    public var signature: String
}

/// The answer of `POST /v1/offers/:public_key/signatures` in the `jws` format.
struct JWSOfferSignature: Codable, Hashable, Sendable {
    var signature: String
}
