import Domain
import HTTPCore

/// `POST /v1/offers/:publicKey/signatures`: promotional offers signed with the project's In-App Purchase key.
struct OffersController: APIController {
    /// The offer-signing use case at this server's clock.
    let offerSignatures: OfferSignatures

    var routes: [APIRoute] {
        [APIRoute(.post, "/v1/offers/:publicKey/signatures", .app, publicKey: Self.offerKeySuggestion,
                  errors: ErrorContext(product: .offer), postOfferSignature)]
    }

    static let offerSuggestion = "Request body requires product_id (a product mapped in the project), offer_id (the "
        + "promotional offer's identifier in App Store Connect) and format ('legacy' or 'jws'). Optional: "
        + "app_account_token (a UUID, legacy only), transaction_id (the customer's transaction id or "
        + "appTransactionId, jws only)."
    static let offerKeySuggestion =
        "Use a valid public key (pk_...) in the URL path: POST /v1/offers/:public_key/signatures."

    /// `POST /v1/offers/:publicKey/signatures`: sign a promotional offer of a mapped product with the project's
    /// In-App Purchase key, in the legacy form or as a JWS.
    func postOfferSignature(_ request: Request, _ project: Project) throws -> Response {
        var fields = try FieldValidator(request, suggestion: Self.offerSuggestion)
        // Types and presence here; lengths, formats and which field goes with which format are the use case's rules,
        // added below so one answer lists every problem.
        let productId = fields.string("product_id", required: true, minLength: 0)
        let offerId = fields.string("offer_id", required: true, minLength: 0)
        if !fields.has("format") { fields.fail(["format"], "Required") }
        let format = fields.enumeration("format", OfferSignatureFormat.allCases.map(\.rawValue))
            .flatMap(OfferSignatureFormat.init(rawValue:))
        let token = fields.string("app_account_token", required: false, minLength: 0)
        let transactionId = fields.string("transaction_id", required: false, minLength: 0)
        fields.add(OfferSignatureRules.problems(productId: productId, offerId: offerId, format: format,
                                                appAccountToken: token, transactionId: transactionId))
        try fields.check(suggestion: Self.offerSuggestion)
        guard let productId, let offerId, let format else {
            throw HTTPError.validation([], suggestion: Self.offerSuggestion)   // unreachable: reported above
        }
        let signed = try RequestBody.translating(suggestion: Self.offerSuggestion) {
            try offerSignatures.sign(
                OfferSignatureRequest(productId: productId, offerId: offerId, format: format,
                                      appAccountToken: token, transactionId: transactionId),
                for: project)
        }
        return Response.json(200, Self.offerSignatureBody(signed))
    }

    /// Legacy: `{"key_id","nonce","timestamp","signature"}`; JWS: `{"signature"}`.
    static func offerSignatureBody(_ signed: OfferSignature) -> [UInt8] {
        var body = JSONBody(capacity: 512)
        body.beginObject()
        switch signed {
        case .legacy(let legacy):
            body.field("key_id", legacy.keyId)
            body.field("nonce", legacy.nonce)
            body.field("timestamp", legacy.timestamp)
            body.field("signature", legacy.signature)
        case .jws(let jws):
            body.field("signature", jws)
        }
        body.endObject()
        return body.bytes
    }
}
