import Domain
import Foundation
import HTTPCore

/// `PUT /v1/admin/projects/:id/purchases/:originalTransactionId/app-account-token`: Apple's Set App Account Token.
struct AppAccountTokensController: APIController {
    let tokens: AppAccountTokens

    var routes: [APIRoute] {
        [APIRoute(.put, "/v1/admin/projects/:id/purchases/:originalTransactionId/app-account-token", .adminAPI,
                  access: .admin(.customersWrite), setAppAccountToken)]
    }

    static let suggestion = "Request body requires app_account_token (string: a UUID, the account your app sets with "
        + "appAccountToken(_:)); the path names the purchase by its original transaction id (digits)."

    func setAppAccountToken(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let originalTransactionId = request.pathParameters["originalTransactionId"] ?? ""
        var fields = try FieldValidator(request, suggestion: Self.suggestion)
        let text = fields.string("app_account_token", required: true, maxLength: 36)
        let token = text.flatMap(UUID.init(uuidString:))
        if text != nil && token == nil { fields.fail(["app_account_token"], "Must be a UUID") }
        fields.add(TransactionLookup.problems(transactionId: originalTransactionId, path: ["originalTransactionId"]))
        try fields.check(suggestion: Self.suggestion)
        guard let token else {
            throw HTTPError.validation([ErrorDetail(path: ["app_account_token"], message: "Required")], suggestion: Self.suggestion)
        }
        let outcome = try RequestBody.translating(suggestion: Self.suggestion) {
            try tokens.set(projectId: id, originalTransactionId: originalTransactionId, token: token)
        }
        var body = JSONBody(capacity: 256)
        body.beginObject()
        body.field("original_transaction_id", outcome.originalTransactionId)
        body.field("environment", outcome.environment.rawValue)
        body.field("app_account_token", outcome.appAccountToken.lowercasedText)
        body.field("transaction_recorded", outcome.transactionRecorded)
        body.field("user_id", outcome.userId)
        body.endObject()
        return Response.json(200, body.bytes)
    }
}
