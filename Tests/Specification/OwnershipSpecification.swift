public import Domain

/// The executable specification of the binding step (the project's transfer policy).
///
/// The live author of this rule is SQL: `bouncer_record_transaction` (schema/functions/) decides and binds in the
/// statement that records the transaction. This Swift statement of the same rule runs only in tests: `RuleTableTests`
/// runs both on every policy × holder situation, `WriteRulesOracleTests` on random sequences.
extension OwnershipRules {
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
