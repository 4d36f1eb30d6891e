public import Foundation

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

    /// When a RESCIND_CONSENT notification withdrew consent for its app transaction: Apple's `signedDate`, else
    /// when it was received; `nil` for every other notification. Entitlements are not changed by it.
    public static func consentRescindedAt(by facts: NotificationFacts, receivedAt now: Date) -> Date? {
        guard NotificationType(rawValue: facts.type) == .rescindConsent, facts.appTransaction != nil else { return nil }
        return facts.signedDate ?? now
    }
}
