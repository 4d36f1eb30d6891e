/// What to do when a user posts a purchase, given who already holds it.
public enum OwnershipDecision: Sendable, Equatable {
    /// Nobody holds it yet: bind it to the user.
    case bind
    /// The user already holds it: nothing changes.
    case alreadyOwned
    /// `transfer` policy: the user gets it and these previous owners lose it (record the move).
    case transfer(from: [String])
    /// `share` policy: the user gets it too; the others keep it.
    case share
    /// `block` policy: refuse; `owner` keeps it.
    case block(owner: String)
}

/// Ownership rules for restores across accounts (the project's transfer policy).
///
/// The specification of the binding step; the database applies it in the same statement that records the
/// transaction (schema/0006's `bouncer_record_transaction`), and `WriteRulesOracleTests` checks the two agree.
public enum OwnershipRules {
    /// Decides what posting a purchase for `user` does, given its current holders (in binding order).
    public static func decide(currentOwners: [String], user: String, policy: TransferPolicy) -> OwnershipDecision {
        if currentOwners.isEmpty { return .bind }
        if currentOwners.contains(user) {
            // Under `transfer`, a user who holds it alongside others (bound while the policy was `share`)
            // takes it over alone.
            if policy == .transfer && currentOwners.count > 1 {
                return .transfer(from: currentOwners.filter { $0 != user })
            }
            return .alreadyOwned
        }
        switch policy {
        case .transfer: return .transfer(from: currentOwners)
        case .share: return .share
        case .block: return .block(owner: currentOwners[0])
        }
    }
}
