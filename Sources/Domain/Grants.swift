public import Foundation

/// An entitlement given to a user by an admin (support, promotions), not by a purchase.
///
/// Grants are never deleted: removing one sets `revokedAt`, so the customer timeline keeps explaining it. An erased
/// user's grants lose their user (`userId` is nil) and reason.
public struct Grant: Sendable, Equatable {
    /// The grant's id.
    public var id: UUID
    /// The user it is for; nil once the user was erased.
    public var userId: String?
    /// The entitlement it gives.
    public var entitlement: String
    /// When it ends; nil for no end.
    public var expiresAt: Date?
    /// Why it was given (free text for people: a support ticket, a promotion).
    public var reason: String
    /// When it was given.
    public var createdAt: Date
    /// When an admin removed it; nil while it stands.
    public var revokedAt: Date?

    /// Creates a value.
    public init(id: UUID, userId: String?, entitlement: String, expiresAt: Date?, reason: String, createdAt: Date,
                revokedAt: Date? = nil) {
        self.id = id
        self.userId = userId
        self.entitlement = entitlement
        self.expiresAt = expiresAt
        self.reason = reason
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    /// Whether the grant gives its entitlement at `now`: not removed, and not yet at its end.
    public func isActive(at now: Date) -> Bool {
        revokedAt == nil && (expiresAt.map { now < $0 } ?? true)
    }
}

/// What an admin asks for in `POST …/users/{userId}/grants`.
public struct NewGrant: Sendable, Equatable {
    /// The user.
    public var userId: String
    /// The entitlement.
    public var entitlement: String
    /// When it ends; nil for no end.
    public var expiresAt: Date?
    /// Why.
    public var reason: String

    /// Creates a value.
    public init(userId: String, entitlement: String, expiresAt: Date?, reason: String) {
        self.userId = userId
        self.entitlement = entitlement
        self.expiresAt = expiresAt
        self.reason = reason
    }
}

/// The limits on grants and user ids, shared by the admin API and the CLI.
public enum GrantRules {
    /// User id length, in Unicode scalars (as `GET /v1/subscriptions` and `POST /v1/receipts`).
    public static let userIdLength = 1...256
    /// Reason length, in Unicode scalars.
    public static let reasonLength = 1...500

    /// Every rule `grant` breaks at `now` (the end, when given, must be in the future).
    public static func problems(in grant: NewGrant, at now: Date) -> [FieldProblem] {
        var out = problems(userId: grant.userId)
        out += length(grant.entitlement, ["entitlement"], ProjectRules.entitlementLength)
        out += length(grant.reason, ["reason"], reasonLength)
        if let expiresAt = grant.expiresAt, expiresAt <= now {
            out.append(FieldProblem(path: ["expires_at"], message: "Must be in the future"))
        }
        return out
    }

    /// Every rule a user id breaks (`userId` is its name in the URL).
    public static func problems(userId: String) -> [FieldProblem] {
        length(userId, ["userId"], userIdLength)
    }

    private static func length(_ value: String, _ path: [String], _ range: ClosedRange<Int>) -> [FieldProblem] {
        // PostgreSQL text cannot hold U+0000 (a path may carry %00): refused here, not failed in storage.
        if value.utf8.contains(0) { return [FieldProblem(path: path, message: "String must not contain NUL characters")] }
        let count = value.unicodeScalars.count
        if count < range.lowerBound {
            return [FieldProblem(path: path, message: "String must contain at least \(range.lowerBound) character(s)")]
        }
        if count > range.upperBound {
            return [FieldProblem(path: path, message: "String must contain at most \(range.upperBound) character(s)")]
        }
        return []
    }
}
