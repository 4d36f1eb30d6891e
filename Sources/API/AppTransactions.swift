import Domain
import Foundation
import HTTPCore

/// `POST /v1/app-transactions/:publicKey`: signed app transactions, and what they grant.
struct AppTransactionsController: APIController {
    let verifier: any SignedDataVerifying
    let store: any AppTransactionStore
    let now: @Sendable () -> Date

    var routes: [APIRoute] {
        [APIRoute(.post, "/v1/app-transactions/:publicKey", .app, publicKey: Self.appTransactionKeySuggestion,
                  errors: ErrorContext(signedData: .appTransaction), postAppTransaction)]
    }

    static let appTransactionSuggestion = "Request body requires signed_app_transaction (string: StoreKit's "
        + "AppTransaction.shared jwsRepresentation). Optional: user_id."
    static let appTransactionKeySuggestion = "Use a valid public key (pk_...) in the URL path: "
        + "POST /v1/app-transactions/:public_key."

    /// `POST /v1/app-transactions/:publicKey`: verify a signed app transaction for the project (its chain judged at
    /// `receiptCreationDate`), store it by `appTransactionId` (bound to `user_id` when given) and answer what it
    /// grants under the project's `app_purchase_entitlements`.
    func postAppTransaction(_ request: Request, _ project: Project) throws -> Response {
        let body = try RequestBody.object(request, suggestion: Self.appTransactionSuggestion)
        var fields = FieldValidator(body)
        let jws = fields.string("signed_app_transaction", required: true)
        let userId = fields.string("user_id", required: false, maxLength: 256)
        try fields.check(suggestion: Self.appTransactionSuggestion)
        guard let jws, ReceiptsController.hasThreeParts(jws) else {
            throw VerificationFailure(code: .invalidJWSFormat, reason: "expected 3 dot-separated parts", step: "format")
        }
        // The form receipts bind and reads use (require_match, prefer: a UUID in lowercase).
        let canonicalUserId = userId.map { AccountBindingRules.canonicalUserId($0, policy: project.appAccountTokenPolicy) }
        let answer = try AppPurchases.record(
            jws, userId: canonicalUserId, project: project, verifier: verifier, store: store, now: now())
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
