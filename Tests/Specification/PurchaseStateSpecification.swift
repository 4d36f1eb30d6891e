public import Domain

/// The executable specification of how a stored purchase changes.
///
/// The live author of this rule is SQL: `bouncer_record_transaction` and `bouncer_record_renewal`
/// (schema/functions/) apply it inside the one statement that records a fact. This Swift statement of the same rule
/// runs only in tests: `RuleTableTests` (boundary tables) and `WriteRulesOracleTests` (random sequences) run both on
/// the same facts and require the same rows; the API tests' fake store uses it as its write path.
extension PurchaseState {
    /// The state a purchase has when its first known transaction is `transaction`.
    public init(first transaction: TransactionFacts) {
        self.init(
            originalTransactionId: transaction.originalTransactionId,
            latestTransactionId: transaction.transactionId,
            productId: transaction.productId,
            type: transaction.type,
            environment: transaction.environment,
            purchaseDate: transaction.purchaseDate,
            expiresDate: transaction.expiresDate,
            revocationDate: transaction.accessRevocationDate,
            revocationReason: transaction.revocationReason,
            ownershipType: transaction.ownershipType,
            latestSignedDate: transaction.signedDate
        )
    }

    /// Whether `transaction` says something newer about this purchase than what is known.
    ///
    /// A fact about another purchase, or from another environment, is never newer.
    /// - The same transaction again: newer only if Apple signed it later (a refund, a reversal, an extension).
    /// - Another transaction: newer if it starts later (a renewal, an upgrade); on a tie, the later signature wins,
    ///   then the larger transaction id, so every replica picks the same one.
    public func isSuperseded(by transaction: TransactionFacts) -> Bool {
        guard transaction.originalTransactionId == originalTransactionId, transaction.environment == environment else {
            return false
        }
        if transaction.transactionId == latestTransactionId {
            return transaction.signedDate > latestSignedDate
        }
        if transaction.purchaseDate != purchaseDate { return transaction.purchaseDate > purchaseDate }
        if transaction.signedDate != latestSignedDate { return transaction.signedDate > latestSignedDate }
        return transaction.transactionId > latestTransactionId
    }

    /// The state after `transaction`, or `nil` when it is not newer (nothing to change).
    public func applying(_ transaction: TransactionFacts) -> PurchaseState? {
        guard isSuperseded(by: transaction) else { return nil }
        var next = PurchaseState(first: transaction)
        next.renewal = renewal
        return next
    }

    /// The state after `renewal`, or `nil` when it is not newer than the renewal info already known.
    public func applying(_ renewal: RenewalFacts) -> PurchaseState? {
        guard renewal.originalTransactionId == originalTransactionId, renewal.environment == environment else {
            return nil
        }
        if let known = self.renewal, renewal.signedDate <= known.signedDate { return nil }
        var next = self
        next.renewal = renewal
        return next
    }
}
