import Domain
import Foundation
import Postgres

/// How a `purchases` row maps to `PurchaseState` (with its `RenewalFacts`).
///
/// Renewal info is present exactly when `renewal_signed_date` is set: every renewal fact is signed.
enum PurchaseRows {
    /// The `purchases` columns `state(from:)` reads, qualified with the alias `p`.
    static let columns = """
        p.original_transaction_id, p.latest_transaction_id, p.product_id, p.type, p.environment, p.purchase_date,
        p.expires_date, p.revocation_date, p.revocation_reason, p.ownership_type, p.latest_signed_date,
        p.auto_renew_status, p.auto_renew_product_id, p.expiration_intent, p.grace_period_expires_date,
        p.is_in_billing_retry, p.price_increase_status, p.offer_type, p.offer_identifier, p.renewal_signed_date,
        p.renewal_payload, p.renewal_product_id, p.renewal_date, p.renewal_environment, p.eligible_win_back_offer_ids
        """

    /// The purchase state a row describes.
    static func state(from row: Row) throws -> PurchaseState {
        let originalTransactionId = try row.decode("original_transaction_id", as: String.self)
        let environment = StoreEnvironment(rawValue: try row.decode("environment", as: String.self))
        var renewal: RenewalFacts?
        if let signedDate = try row.decode("renewal_signed_date", as: Date?.self) {
            renewal = RenewalFacts(
                originalTransactionId: originalTransactionId,
                productId: try row.decode("renewal_product_id", as: String?.self),
                autoRenewProductId: try row.decode("auto_renew_product_id", as: String?.self),
                autoRenewStatus: try row.decode("auto_renew_status", as: Int?.self),
                expirationIntent: try row.decode("expiration_intent", as: Int?.self),
                gracePeriodExpiresDate: try row.decode("grace_period_expires_date", as: Date?.self),
                isInBillingRetryPeriod: try row.decode("is_in_billing_retry", as: Bool?.self),
                priceIncreaseStatus: try row.decode("price_increase_status", as: Int?.self),
                offerType: try row.decode("offer_type", as: Int?.self),
                offerIdentifier: try row.decode("offer_identifier", as: String?.self),
                renewalDate: try row.decode("renewal_date", as: Date?.self),
                // Rows written before renewal_environment existed: the purchase's environment is the renewal's.
                environment: try row.decode("renewal_environment", as: String?.self)
                    .map(StoreEnvironment.init(rawValue:)) ?? environment,
                signedDate: signedDate,
                payloadJSON: try row.decode("renewal_payload", as: String?.self) ?? "{}",
                eligibleWinBackOfferIds: try row.decode("eligible_win_back_offer_ids", as: [String]?.self) ?? []
            )
        }
        return PurchaseState(
            originalTransactionId: originalTransactionId,
            latestTransactionId: try row.decode("latest_transaction_id", as: String.self),
            productId: try row.decode("product_id", as: String.self),
            type: ProductType(rawValue: try row.decode("type", as: String.self)),
            environment: environment,
            purchaseDate: try row.decode("purchase_date", as: Date.self),
            expiresDate: try row.decode("expires_date", as: Date?.self),
            revocationDate: try row.decode("revocation_date", as: Date?.self),
            revocationReason: try row.decode("revocation_reason", as: Int?.self),
            ownershipType: try row.decode("ownership_type", as: String?.self).map(OwnershipType.init(rawValue:)),
            latestSignedDate: try row.decode("latest_signed_date", as: Date.self),
            renewal: renewal
        )
    }
}
