/// An App Store Server Notifications V2 `notificationType`; unknown values are kept.
public struct NotificationType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's spelling.
    public let rawValue: String
    /// Wraps any value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// See `rawValue`.
    public var description: String { rawValue }

    public static let subscribed = NotificationType(rawValue: "SUBSCRIBED")
    public static let didRenew = NotificationType(rawValue: "DID_RENEW")
    public static let didChangeRenewalPref = NotificationType(rawValue: "DID_CHANGE_RENEWAL_PREF")
    public static let didChangeRenewalStatus = NotificationType(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    public static let offerRedeemed = NotificationType(rawValue: "OFFER_REDEEMED")
    public static let didFailToRenew = NotificationType(rawValue: "DID_FAIL_TO_RENEW")
    public static let gracePeriodExpired = NotificationType(rawValue: "GRACE_PERIOD_EXPIRED")
    public static let expired = NotificationType(rawValue: "EXPIRED")
    public static let refund = NotificationType(rawValue: "REFUND")
    public static let refundDeclined = NotificationType(rawValue: "REFUND_DECLINED")
    public static let refundReversed = NotificationType(rawValue: "REFUND_REVERSED")
    public static let revoke = NotificationType(rawValue: "REVOKE")
    public static let renewalExtended = NotificationType(rawValue: "RENEWAL_EXTENDED")
    public static let renewalExtension = NotificationType(rawValue: "RENEWAL_EXTENSION")
    public static let priceIncrease = NotificationType(rawValue: "PRICE_INCREASE")
    public static let consumptionRequest = NotificationType(rawValue: "CONSUMPTION_REQUEST")
    public static let oneTimeCharge = NotificationType(rawValue: "ONE_TIME_CHARGE")
    public static let test = NotificationType(rawValue: "TEST")
    public static let externalPurchaseToken = NotificationType(rawValue: "EXTERNAL_PURCHASE_TOKEN")
    public static let rescindConsent = NotificationType(rawValue: "RESCIND_CONSENT")
    public static let metadataUpdate = NotificationType(rawValue: "METADATA_UPDATE")
    public static let migration = NotificationType(rawValue: "MIGRATION")
    public static let priceChange = NotificationType(rawValue: "PRICE_CHANGE")

    /// Every type documented when this was written.
    public static let known: [NotificationType] = [
        .subscribed, .didRenew, .didChangeRenewalPref, .didChangeRenewalStatus, .offerRedeemed, .didFailToRenew,
        .gracePeriodExpired, .expired, .refund, .refundDeclined, .refundReversed, .revoke, .renewalExtended,
        .renewalExtension, .priceIncrease, .consumptionRequest, .oneTimeCharge, .test, .externalPurchaseToken,
        .rescindConsent, .metadataUpdate, .migration, .priceChange,
    ]
}

/// What Bouncer does with a notification.
public enum NotificationEffect: String, Sendable {
    /// Apply the signed transaction and renewal facts it carries to the purchase (facts decide state, not the type).
    case applyFacts
    /// Store it for audit and later work (a consumption responder, support), with no state change.
    case recordOnly
}

/// Notification rules: facts, not events, decide state.
///
/// Every notification is stored raw once (keyed by its UUID). If it carries a signed transaction or renewal info,
/// those facts are applied under the same newer-wins rules as receipts, so a refund (a transaction with a
/// revocation date), a renewal, a grace period (renewal info) or a reversal each land whatever the delivery order.
public enum NotificationRules {
    /// The effect of a notification, from what it carries.
    ///
    /// CONSUMPTION_REQUEST and REFUND_DECLINED carry the unchanged transaction: applying it is harmless (not newer),
    /// but they are recorded for a later responder. TEST, EXTERNAL_PURCHASE_TOKEN and summary-only
    /// RENEWAL_EXTENSION carry no purchase facts.
    public static func effect(of facts: NotificationFacts) -> NotificationEffect {
        facts.transaction != nil || facts.renewal != nil ? .applyFacts : .recordOnly
    }
}
