public import Foundation

/// Whether the `appAccountToken` Apple signs into a transaction decides which user a posted purchase binds to.
///
/// An app sets the token at purchase (`Product.PurchaseOption.appAccountToken(uuid)`); Apple signs it into every
/// transaction of the purchase, so unlike the posted `user_id` it cannot be changed by whoever holds a leaked JWS.
public enum AppAccountTokenPolicy: String, Sendable, CaseIterable {
    /// The posted `user_id` wins (the behaviour before the setting existed). The default.
    case ignore
    /// A transaction with a token binds only to the user whose id equals it (as a UUID, in either letter case).
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
///
/// Under `requireMatch` and `prefer` a user id may be compared with an appAccountToken, so a user id that is a UUID
/// has one canonical form, Apple's (lowercase, hyphenated; Swift's `UUID().uuidString` is upper case): it is the form
/// stored and read, so two spellings of one UUID are never two holders of one purchase. Under `ignore` user ids are
/// opaque strings, kept as posted.
public enum AccountBindingRules {
    /// `userId` in the form the project stores: under `requireMatch` and `prefer`, a UUID in any letter case becomes
    /// lowercase; anything else is unchanged.
    public static func canonicalUserId(_ userId: String, policy: AppAccountTokenPolicy) -> String {
        guard policy != .ignore, let uuid = UUID(uuidString: userId) else { return userId }
        return uuid.lowercasedText
    }

    /// Whether `appAccountToken` names `userId` (already canonical): only under `requireMatch` and `prefer`, where the
    /// token is an identity. Under `ignore` the project binds by the posted id alone, so the token proves nothing.
    public static func tokenNames(userId: String?, appAccountToken: UUID?, policy: AppAccountTokenPolicy) -> Bool {
        guard policy != .ignore, let userId, let token = appAccountToken else { return false }
        return userId == token.lowercasedText
    }

    /// The user to bind (`nil`: bind none) and where it came from.
    ///
    /// Transactions without a token follow the posted `userId` (in its canonical form) under every policy.
    /// - Throws: `DomainError(.appAccountTokenMismatch)` under `requireMatch` when a user is posted that is not the
    ///   token (nothing may be written then).
    public static func boundUser(
        postedUserId: String?, appAccountToken: UUID?, policy: AppAccountTokenPolicy
    ) throws -> (userId: String?, source: BoundUserSource?) {
        let postedUserId = postedUserId.map { canonicalUserId($0, policy: policy) }
        guard let token = appAccountToken else { return (postedUserId, postedUserId == nil ? nil : .request) }
        switch policy {
        case .ignore:
            return (postedUserId, postedUserId == nil ? nil : .request)
        case .requireMatch:
            guard let posted = postedUserId else { return (nil, nil) }
            // Canonical above, so "ABC…" and "abc…" are the same user, stored once.
            guard posted == token.lowercasedText else {
                throw DomainError(
                    .appAccountTokenMismatch,
                    "The transaction's appAccountToken does not match the posted user_id.")
            }
            return (posted, .request)
        case .prefer:
            return (token.lowercasedText, .appAccountToken)
        }
    }
}
