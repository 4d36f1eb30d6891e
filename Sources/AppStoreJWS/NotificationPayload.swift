public import Domain
public import Foundation
import JSON

/// A decoded App Store Server Notification V2 (`signedPayload`, ResponseBodyV2DecodedPayload).
/// `data`, `summary`, `externalPurchaseToken` and `appData` are mutually exclusive.
public struct NotificationPayload: Sendable, Equatable {
    /// What happened.
    public var notificationType: NotificationType
    /// Detail of `notificationType`.
    public var subtype: NotificationSubtype?
    /// Unique per notification; Apple's retries reuse it (deduplicate on it).
    public var notificationUUID: String
    /// Notification version, "2.0".
    public var version: String?
    /// When Apple signed it; absent in some early-2022 payloads (then "now" is the effective date).
    public var signedDate: Date?
    /// App and transaction data for most notification types.
    public var data: NotificationData?
    /// Summary of a mass renewal-date extension (RENEWAL_EXTENSION/SUMMARY).
    public var summary: NotificationSummary?
    /// External purchase token (EXTERNAL_PURCHASE_TOKEN).
    public var externalPurchaseToken: ExternalPurchaseToken?
    /// App-level data (RESCIND_CONSENT and similar).
    public var appData: NotificationAppData?

    init(_ reader: PayloadReader) throws(VerificationError) {
        notificationType = NotificationType(rawValue: try reader.requiredString("notificationType"))
        subtype = try reader.string("subtype").map(NotificationSubtype.init(rawValue:))
        notificationUUID = try reader.requiredString("notificationUUID")
        version = try reader.string("version")
        signedDate = try reader.date("signedDate")
        data = try reader.nested("data", NotificationData.init)
        summary = try reader.nested("summary", NotificationSummary.init)
        externalPurchaseToken = try reader.nested("externalPurchaseToken", ExternalPurchaseToken.init)
        appData = try reader.nested("appData", NotificationAppData.init)
    }
}

/// The `data` object of a notification.
public struct NotificationData: Sendable, Equatable {
    /// App Store app id (may be absent in Sandbox).
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The app's build version.
    public var bundleVersion: String?
    /// The environment of the notification.
    public var environment: AppStoreEnvironment?
    /// Nested transaction JWS (verified separately by `verifyNotification`).
    public var signedTransactionInfo: String?
    /// Nested renewal-info JWS (verified separately by `verifyNotification`).
    public var signedRenewalInfo: String?
    /// Subscription status.
    public var status: SubscriptionStatus?
    /// Why the customer asked for a refund (CONSUMPTION_REQUEST).
    public var consumptionRequestReason: ConsumptionRequestReason?

    init(_ reader: PayloadReader) throws(VerificationError) {
        appAppleId = try reader.int64("appAppleId")
        bundleId = try reader.string("bundleId")
        bundleVersion = try reader.string("bundleVersion")
        environment = try reader.string("environment").map(AppStoreEnvironment.init(rawValue:))
        signedTransactionInfo = try reader.string("signedTransactionInfo")
        signedRenewalInfo = try reader.string("signedRenewalInfo")
        status = try reader.int64("status").map(SubscriptionStatus.init(rawValue:))
        consumptionRequestReason = try reader.string("consumptionRequestReason").map(ConsumptionRequestReason.init(rawValue:))
    }
}

/// The `summary` object of a RENEWAL_EXTENSION/SUMMARY notification.
public struct NotificationSummary: Sendable, Equatable {
    /// The environment.
    public var environment: AppStoreEnvironment?
    /// App Store app id.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// Extended product.
    public var productId: String?
    /// The request id given when the extension was requested.
    public var requestIdentifier: String?
    /// Storefronts included.
    public var storefrontCountryCodes: [String]?
    /// Subscriptions extended.
    public var succeededCount: Int64?
    /// Subscriptions that could not be extended.
    public var failedCount: Int64?

    init(_ reader: PayloadReader) throws(VerificationError) {
        environment = try reader.string("environment").map(AppStoreEnvironment.init(rawValue:))
        appAppleId = try reader.int64("appAppleId")
        bundleId = try reader.string("bundleId")
        productId = try reader.string("productId")
        requestIdentifier = try reader.string("requestIdentifier")
        storefrontCountryCodes = try reader.strings("storefrontCountryCodes")
        succeededCount = try reader.int64("succeededCount")
        failedCount = try reader.int64("failedCount")
    }
}

/// The `externalPurchaseToken` object of an EXTERNAL_PURCHASE_TOKEN notification (no environment
/// field: Apple's rule is Sandbox when `externalPurchaseId` starts with "SANDBOX", else Production).
public struct ExternalPurchaseToken: Sendable, Equatable {
    /// The token's id.
    public var externalPurchaseId: String?
    /// When the token was created.
    public var tokenCreationDate: Date?
    /// App Store app id.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The kind of token (`tokenType`, June 2025), raw.
    public var tokenType: String?
    /// When a custom link token expires (`tokenExpirationDate`, June 2025).
    public var tokenExpirationDate: Date?

    init(_ reader: PayloadReader) throws(VerificationError) {
        externalPurchaseId = try reader.string("externalPurchaseId")
        tokenCreationDate = try reader.date("tokenCreationDate")
        tokenType = try reader.string("tokenType")
        tokenExpirationDate = try reader.date("tokenExpirationDate")
        appAppleId = try reader.int64("appAppleId")
        bundleId = try reader.string("bundleId")
    }

    /// The environment derived from the id prefix, as Apple's libraries do.
    public var environment: AppStoreEnvironment {
        (externalPurchaseId ?? "").hasPrefix("SANDBOX") ? .sandbox : .production
    }
}

/// The `appData` object of an app-level notification.
public struct NotificationAppData: Sendable, Equatable {
    /// App Store app id.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The environment.
    public var environment: AppStoreEnvironment?
    /// Nested app-transaction JWS (verified separately by `verifyNotification`).
    public var signedAppTransactionInfo: String?

    init(_ reader: PayloadReader) throws(VerificationError) {
        appAppleId = try reader.int64("appAppleId")
        bundleId = try reader.string("bundleId")
        environment = try reader.string("environment").map(AppStoreEnvironment.init(rawValue:))
        signedAppTransactionInfo = try reader.string("signedAppTransactionInfo")
    }
}
