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
        var body = JSONBody(capacity: 256)
        body.raw(#"{"app_transaction_id":"#)
        body.string(facts.appTransactionId)
        body.raw(#","bundle_id":"#)
        body.string(facts.bundleId)
        body.raw(#","environment":"#)
        body.string(facts.environment.rawValue)
        body.raw(#","original_application_version":"#)
        body.stringOrNull(answer.recorded.stored.originalApplicationVersion)
        body.raw(#","original_purchase_date":"#)
        body.dateOrNull(answer.recorded.stored.originalPurchaseDate)
        body.raw(#","entitlements":"#)
        body.strings(answer.entitlements)
        body.raw(#","consent_rescinded_at":"#)
        body.dateOrNull(answer.recorded.stored.consentRescindedAt)
        body.raw("}")
        return body.bytes
    }
}
