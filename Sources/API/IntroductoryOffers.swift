import Domain
import HTTPCore

/// `POST /v1/offers/:publicKey/introductory-eligibility`: the server decides whether a user may take a product's
/// introductory offer and signs the decision for StoreKit.
///
/// The public key names the project; the secret key is required too. The decision is about a user, and a public key
/// (shipped inside the app) proves nothing about who is asking: with it alone anyone could claim a fresh `user_id`
/// and be signed a second free trial. The app's backend, which knows who its user is, calls with
/// `Authorization: Bearer sk_…` and hands the signature to the app.
struct IntroductoryOffersController: APIController {
    let keys: KeyAuth
    /// The eligibility use case at this server's clock.
    let eligibility: IntroductoryOfferEligibility

    var routes: [APIRoute] {
        [APIRoute(.post, "/v1/offers/:publicKey/introductory-eligibility", .appRead,
                  publicKey: Self.keySuggestion, errors: ErrorContext(product: .offer), postEligibility)]
    }

    static let suggestion = "Request body requires product_id (a product mapped in the project) and user_id (1 to "
        + "256 characters). Optional: transaction_id (the customer's transaction id or appTransactionId)."
    static let keySuggestion =
        "Use a valid public key (pk_...) in the URL path: POST /v1/offers/:public_key/introductory-eligibility."
    static let secretKeyRequired = HTTPError.requiresSecretKey(
        "Introductory offer eligibility is decided for a user: call from your backend with "
            + "Authorization: Bearer sk_... and pass the signature to the app.")

    /// `POST /v1/offers/:publicKey/introductory-eligibility` → `{eligible, reason, signature}`.
    func postEligibility(_ request: Request, _ project: Project) throws -> Response {
        guard try keys.presentsSecretKey(request, project: project) else { throw Self.secretKeyRequired }
        var fields = try FieldValidator(request, suggestion: Self.suggestion)
        let productId = fields.string("product_id", required: true, minLength: 0)
        let rawUserId = fields.string("user_id", required: true, minLength: 0)
        let transactionId = fields.string("transaction_id", required: false, minLength: 0)
        let userId = rawUserId.map { AccountBindingRules.canonicalUserId($0, policy: project.appAccountTokenPolicy) }
        fields.add(IntroductoryOfferRules.problems(productId: productId, userId: userId, transactionId: transactionId))
        try fields.check(suggestion: Self.suggestion)
        guard let productId, let userId else {
            throw HTTPError.validation([], suggestion: Self.suggestion)   // unreachable: reported above
        }
        let answer = try RequestBody.translating(suggestion: Self.suggestion) {
            try eligibility.decide(
                IntroductoryOfferRequest(productId: productId, userId: userId, transactionId: transactionId),
                for: project)
        }
        var out = JSONBody(capacity: 512)
        out.beginObject()
        out.field("eligible", answer.decision.eligible)
        out.field("reason", answer.decision.reason.rawValue)
        out.field("signature", answer.signature)
        out.endObject()
        return Response.json(200, out.bytes)
    }
}
