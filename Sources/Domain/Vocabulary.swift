import Foundation

/// An App Store environment (`Production`, `Sandbox`, `Xcode`, `LocalTesting`).
///
/// A raw-value struct rather than an enum: Apple adds values, and an unknown one must be kept, not rejected.
public struct StoreEnvironment: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's spelling of the environment.
    public let rawValue: String
    /// Wraps any value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }

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
    /// See `rawValue`.
    public var description: String { rawValue }
}

/// The kind of in-app product a transaction is for (`type` in Apple's payload).
public struct ProductType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's spelling of the type.
    public let rawValue: String
    /// Wraps any value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Renews until cancelled; the only type whose renewal info matters.
    public static let autoRenewable = ProductType(rawValue: "Auto-Renewable Subscription")
    /// Bought once, kept forever.
    public static let nonConsumable = ProductType(rawValue: "Non-Consumable")
    /// Used up; may be bought again.
    public static let consumable = ProductType(rawValue: "Consumable")
    /// A fixed period that does not renew by itself.
    public static let nonRenewing = ProductType(rawValue: "Non-Renewing Subscription")

    /// See `rawValue`.
    public var description: String { rawValue }
}

/// Whether the purchaser bought the product or received it through Family Sharing (`inAppOwnershipType`).
public struct OwnershipType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's spelling.
    public let rawValue: String
    /// Wraps any value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Bought by this Apple account.
    public static let purchased = OwnershipType(rawValue: "PURCHASED")
    /// Shared by a family member; Apple sends REVOKE when sharing stops.
    public static let familyShared = OwnershipType(rawValue: "FAMILY_SHARED")
    /// See `rawValue`.
    public var description: String { rawValue }
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
