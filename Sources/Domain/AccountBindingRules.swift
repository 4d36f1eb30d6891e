import Foundation

/// Whether the `appAccountToken` Apple signs into a transaction decides which user a posted purchase binds to.
///
/// An app sets the token at purchase (`Product.PurchaseOption.appAccountToken(uuid)`); Apple signs it into every
/// transaction of the purchase, so unlike the posted `user_id` it cannot be changed by whoever holds a leaked JWS.
public enum AppAccountTokenPolicy: String, Sendable, CaseIterable {
    /// The posted `user_id` wins (the behaviour before the setting existed). The default.
    case ignore
    /// A transaction with a token binds only to the user whose id equals it (as a UUID, case-insensitively).
    case requireMatch = "require_match"
    /// A transaction with a token binds to the user it names, whatever `user_id` was posted.
    case prefer
}

/// Where the user a purchase was bound to came from.
public enum BoundUserSource: String, Sendable {
    /// The `user_id` the client posted.
    case request
    /// The transaction's signed `appAccountToken`.
    case appAccountToken = "app_account_token"
}

/// The user a posted transaction binds to, under the project's `AppAccountTokenPolicy`.
public enum AccountBindingRules {
    /// The user to bind (`nil`: bind none) and where it came from.
    ///
    /// Transactions without a token follow the posted `userId` under every policy.
    /// - Throws: `DomainError(.appAccountTokenMismatch)` under `requireMatch` when a user is posted that is not the
    ///   token (nothing may be written then).
    public static func boundUser(
        postedUserId: String?, appAccountToken: UUID?, policy: AppAccountTokenPolicy
    ) throws -> (userId: String?, source: BoundUserSource?) {
        guard let token = appAccountToken else { return (postedUserId, postedUserId == nil ? nil : .request) }
        switch policy {
        case .ignore:
            return (postedUserId, postedUserId == nil ? nil : .request)
        case .requireMatch:
            guard let posted = postedUserId else { return (nil, nil) }
            // UUID(uuidString:) accepts either case, so "ABC…" and "abc…" name the same user.
            guard UUID(uuidString: posted) == token else {
                throw DomainError(
                    .appAccountTokenMismatch,
                    "The transaction's appAccountToken does not match the posted user_id.")
            }
            return (posted, .request)
        case .prefer:
            return (token.uuidString.lowercased(), .appAccountToken)
        }
    }
}
