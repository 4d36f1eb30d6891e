import Domain

/// The 201 answer of `POST /v1/receipts/:publicKey`, for a signed transaction, a lookup and a StoreKit 1 receipt
/// alike: the one writer of its shape.
///
/// `{"valid":true,` the answered purchase's `transaction_id` … `status`, the `environment`, with `binding` the bound
/// `user_id` and its `user_id_source`, for a StoreKit 1 receipt its `transactions`, and an `entitlement_token`
/// when one was issued.
struct ReceiptRepresentation {
    /// The transaction an answer describes, what it grants now and its status.
    typealias Answered = (transaction: TransactionFacts, entitlements: [String], status: EntitlementStatus)

    /// The answered transaction; `nil` (all null, status `none`) for a receipt without in-app records.
    var answered: Answered?
    var environment: StoreEnvironment
    /// Projects whose `app_account_token_policy` is not `ignore`: the bound user (null when none) and its source.
    var binding: (userId: String?, source: BoundUserSource?)?
    /// A StoreKit 1 receipt's records in receipt order, each with its own status now; `nil` for a JWS or lookup.
    var transactions: [(transaction: TransactionFacts, status: EntitlementStatus)]?
    /// The entitlement token issued with the answer, if any (`EntitlementTokensController.receiptToken`).
    var entitlementToken: String?

    /// Writes the answer as one object.
    func write(into body: inout JSONBody) {
        body.beginObject()
        body.field("valid", true)
        if let answered {
            let transaction = answered.transaction
            body.field("transaction_id", transaction.transactionId)
            body.field("original_transaction_id", transaction.originalTransactionId)
            body.field("product_id", transaction.productId)
            body.field("entitlements", answered.entitlements)
            body.field("expires_date", transaction.expiresDate)
            body.field("status", answered.status.rawValue)
        } else {
            body.null("transaction_id")
            body.null("original_transaction_id")
            body.null("product_id")
            body.field("entitlements", [String]())
            body.null("expires_date")
            body.field("status", "none")
        }
        body.field("environment", environment.rawValue)
        if let binding {
            body.field("user_id", binding.userId)
            body.field("user_id_source", binding.source?.rawValue)
        }
        if let transactions {
            body.objects("transactions", transactions) { record, body in
                Self.writeTransaction(record.transaction, status: record.status, into: &body)
            }
        }
        if let entitlementToken { body.field("entitlement_token", entitlementToken) }
        body.endObject()
    }

    /// One transaction's members, as a receipt's `transactions` and an order lookup list them: ids, product, dates
    /// and its status now.
    static func writeTransaction(_ transaction: TransactionFacts, status: EntitlementStatus, into body: inout JSONBody) {
        body.field("transaction_id", transaction.transactionId)
        body.field("original_transaction_id", transaction.originalTransactionId)
        body.field("product_id", transaction.productId)
        body.field("purchase_date", transaction.purchaseDate)
        body.field("expires_date", transaction.expiresDate)
        body.field("status", status.rawValue)
    }
}
