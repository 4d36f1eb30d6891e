import Domain
import Foundation
import HTTPCore

/// `POST /v1/app-transactions/:publicKey`: signed app transactions (posted, or fetched from Apple by a transaction
/// id), and what they grant.
struct AppTransactionsController: APIController {
    let verifier: any SignedDataVerifying
    let store: any AppTransactionStore
    let now: @Sendable () -> Date
    /// The secret key a lookup that binds a user needs.
    let keys: KeyAuth
    /// Get App Transaction Info, over the shared lookup use case.
    let transactionLookup: TransactionLookup
    /// `APIDependencies.lookupBudget`: `nil` is unlimited.
    let lookupBudget: LookupBudget?

    var routes: [APIRoute] {
        [APIRoute(.post, "/v1/app-transactions/:publicKey", .app, publicKey: Self.appTransactionKeySuggestion,
                  errors: ErrorContext(signedData: .appTransaction), postAppTransaction)]
    }

    static let appTransactionSuggestion = "Request body requires signed_app_transaction (string: StoreKit's "
        + "AppTransaction.shared jwsRepresentation) or transaction_id (string: any of the customer's transaction ids, "
        + "to fetch it from Apple). Optional: user_id."

    static let appTransactionKeySuggestion = "Use a valid public key (pk_...) in the URL path: "
        + "POST /v1/app-transactions/:public_key."

    /// `POST /v1/app-transactions/:publicKey`: verify a signed app transaction for the project (its chain judged at
    /// `receiptCreationDate`), store it by `appTransactionId` (bound to `user_id` when given) and answer what it
    /// grants under the project's `app_purchase_entitlements`.
    func postAppTransaction(_ request: Request, _ project: Project) throws -> Response {
        var fields = try FieldValidator(request, suggestion: Self.appTransactionSuggestion)
        let lookup = fields.has("transaction_id")
        if lookup && fields.has("signed_app_transaction") {
            let message = "Provide exactly one of signed_app_transaction and transaction_id"
            fields.fail(["signed_app_transaction"], message)
            fields.fail(["transaction_id"], message)
        }
        let jws = lookup ? nil : fields.string("signed_app_transaction", required: true)
        let transactionId = lookup ? fields.string("transaction_id", required: true) : nil
        if let transactionId, fields.parsed("transaction_id") {
            fields.add(TransactionLookup.problems(transactionId: transactionId))
        }
        let userId = fields.string("user_id", required: false, maxLength: 256)
        try fields.check(suggestion: Self.appTransactionSuggestion)
        // The form receipts bind and reads use (require_match, prefer: a UUID in lowercase).
        let canonicalUserId = userId.map { AccountBindingRules.canonicalUserId($0, policy: project.appAccountTokenPolicy) }
        let answer: AppPurchaseAnswer
        if let transactionId {
            // Checked before Apple is asked: a wrong key is refused, and binding a user needs the backend's key.
            let secretKey = try keys.presentsSecretKey(request, project: project)
            if canonicalUserId != nil && !secretKey {
                throw HTTPError.appTransactionLookupSecretKeyRequired
            }
            let facts = try transactionLookup.lookUpAppTransaction(
                transactionId: transactionId, for: project, budget: lookupBudget?.forClient(request.clientKey.description))
            answer = try AppPurchases.record(verified: facts, userId: canonicalUserId, project: project, store: store,
                                             now: now())
        } else {
            guard let jws, ReceiptsController.hasThreeParts(jws) else {
                throw VerificationFailure(code: .invalidJWSFormat, reason: "expected 3 dot-separated parts", step: "format")
            }
            answer = try AppPurchases.record(
                jws, userId: canonicalUserId, project: project, verifier: verifier, store: store, now: now())
        }
        return Response.json(201, Self.appTransactionBody(answer))
    }

    /// The 201 body.
    static func appTransactionBody(_ answer: AppPurchaseAnswer) -> [UInt8] {
        let facts = answer.facts
        let stored = answer.recorded.stored
        var body = JSONBody(capacity: 256)
        body.beginObject()
        body.field("app_transaction_id", facts.appTransactionId)
        body.field("bundle_id", facts.bundleId)
        body.field("environment", facts.environment.rawValue)
        body.field("original_application_version", stored.originalApplicationVersion)
        body.field("original_purchase_date", stored.originalPurchaseDate)
        body.field("entitlements", answer.entitlements)
        body.field("consent_rescinded_at", stored.consentRescindedAt)
        body.endObject()
        return body.bytes
    }
}

extension StoredAppTransaction {
    /// Writes the members every answer about a stored app transaction starts with (`app_transaction_id`,
    /// `environment`, `original_application_version`, `original_purchase_date`): `GET /v1/subscriptions`'s
    /// `app_purchases[]` and the export's `app_transactions[]` continue after them.
    func writeFacts(into body: inout JSONBody) {
        body.field("app_transaction_id", appTransactionId)
        body.field("environment", environment.rawValue)
        body.field("original_application_version", originalApplicationVersion)
        body.field("original_purchase_date", originalPurchaseDate)
    }
}
