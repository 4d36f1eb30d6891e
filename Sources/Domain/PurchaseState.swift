public import Foundation

/// What Bouncer knows about one purchase (one `originalTransactionId`): its latest transaction and renewal info.
///
/// State is rebuilt from signed facts, never from the order they arrived in: recording ignores a fact that is
/// older than what is already known, so duplicate and out-of-order deliveries are harmless.
///
/// How a stored purchase changes is a rule with one live author, SQL (`bouncer_record_transaction` and
/// `bouncer_record_renewal` in schema/functions/); its Swift statement (`applying`) is the executable specification
/// under `Tests/Specification/`, and StorageTests' `RuleTableTests` runs both on the same facts.
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
    /// The latest transaction's `billingPlanType` (`MONTHLY`, `BILLED_UPFRONT`), when the read path loaded it.
    public var billingPlan: String? = nil
    /// The commitment of a commitment plan, when the read path loaded it; `nil` for an ordinary plan.
    public var commitment: CommitmentPlan? = nil

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
}
