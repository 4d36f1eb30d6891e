import Foundation

/// What Bouncer knows about one purchase (one `originalTransactionId`): its latest transaction and renewal info.
///
/// State is rebuilt from signed facts, never from the order they arrived in: `applying` ignores a fact that is
/// older than what is already known, so duplicate and out-of-order deliveries are harmless.
///
/// `isSuperseded`/`applying` are the specification of how a stored purchase changes; the database applies them
/// in one statement (schema/0006's `bouncer_record_transaction` and `bouncer_record_renewal`, the only live
/// writer), and `WriteRulesOracleTests` checks that both give the same rows for random sequences of facts.
public struct PurchaseState: Sendable, Equatable {
    /// The purchase's key, with `environment`.
    public var originalTransactionId: String
    /// The transaction that currently describes the purchase.
    public var latestTransactionId: String
    /// The product of the latest transaction.
    public var productId: String
    /// The product type of the latest transaction.
    public var type: ProductType
    /// Where the purchase's transactions were signed: part of its identity. Anyone can sign Xcode data, so a
    /// fact from another environment never changes this purchase (it belongs to another purchase with the same id).
    public var environment: StoreEnvironment
    /// Purchase date of the latest transaction (start of the current period).
    public var purchaseDate: Date
    /// End of the current period, for subscriptions.
    public var expiresDate: Date?
    /// Set when the latest transaction was refunded or revoked.
    public var revocationDate: Date?
    /// Apple's revocation reason of the latest transaction.
    public var revocationReason: Int?
    /// Purchased or family shared.
    public var ownershipType: OwnershipType?
    /// `signedDate` of the latest transaction fact applied.
    public var latestSignedDate: Date
    /// The newest renewal info, for auto-renewable subscriptions.
    public var renewal: RenewalFacts?
    /// How the latest transaction was refunded or revoked, when the read path loaded it (a `REFUND_PRORATED`
    /// partial refund leaves `revocationDate` unset: the customer keeps access).
    public var revocationType: RevocationType? = nil
    /// The refunded share of the latest transaction, in thousandths of a percent, when the read path loaded it.
    public var revocationPercentage: Int64? = nil

    /// Creates a state value.
    public init(
        originalTransactionId: String, latestTransactionId: String, productId: String, type: ProductType,
        environment: StoreEnvironment, purchaseDate: Date, expiresDate: Date? = nil, revocationDate: Date? = nil,
        revocationReason: Int? = nil, ownershipType: OwnershipType? = nil, latestSignedDate: Date,
        renewal: RenewalFacts? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.latestTransactionId = latestTransactionId
        self.productId = productId
        self.type = type
        self.environment = environment
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.ownershipType = ownershipType
        self.latestSignedDate = latestSignedDate
        self.renewal = renewal
    }

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
