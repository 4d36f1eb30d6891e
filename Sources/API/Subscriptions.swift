import Domain
import HTTPCore

extension APIHandlers {
    /// The published contract's exact text (anchors §0).
    static let subscriptionsKeySuggestion = "Use a valid public key (pk_...) in the URL path."

    /// `GET /v1/subscriptions/:publicKey/:userId`: what the user is entitled to now, computed from stored dates.
    func getSubscriptions(_ request: Request) throws -> Response {
        let project = try Auth.project(
            publicKey: request.pathParameters["publicKey"], deps: deps, suggestion: Self.subscriptionsKeySuggestion)
        try Auth.authorizeRead(request, project: project, deps: deps)
        // A UUID user id reads in the form its purchases were bound under (require_match, prefer).
        let userId = AccountBindingRules.canonicalUserId(
            request.pathParameters["userId"] ?? "", policy: project.appAccountTokenPolicy)
        let scalars = userId.unicodeScalars.count
        guard scalars >= 1, scalars <= 256 else {
            throw HTTPError.validation(
                [ErrorDetail(path: ["userId"], message: scalars == 0
                    ? "String must contain at least 1 character(s)"
                    : "String must contain at most 256 character(s)")],
                suggestion: "Put the user id (1 to 256 characters) in the URL path: GET /v1/subscriptions/:public_key/:user_id.")
        }
        let holdings = try deps.purchases.holdings(userId: userId, project: project)
        let summary = UserEntitlementSummary.summarize(
            holdings, setting: project.appPurchaseEntitlements, at: deps.now())
        return Response.json(200, Self.subscriptionsBody(userId: userId, summary))
    }

    /// The 200 body; each subscription's `entitlements` are what it grants now (empty unless active).
    static func subscriptionsBody(userId: String, _ summary: UserEntitlementSummary) -> [UInt8] {
        var body = JSONBody(capacity: 128 + 480 * summary.purchases.count)
        body.raw(#"{"user_id":"#)
        body.string(userId)
        body.raw(#","status":"#)
        body.string(summary.status.rawValue)
        body.raw(#","entitlements":"#)
        body.strings(summary.entitlements)
        body.raw(#","subscriptions":["#)
        for (i, evaluated) in summary.purchases.enumerated() {
            if i > 0 { body.raw(",") }
            let purchase = evaluated.owned.purchase
            let evaluation = evaluated.evaluation
            let renewal = purchase.renewal
            body.raw(#"{"product_id":"#)
            body.string(purchase.productId)
            body.raw(#","status":"#)
            body.string(evaluation.status.rawValue)
            body.raw(#","current_period_end":"#)
            body.dateOrNull(purchase.expiresDate)
            body.raw(#","auto_renew_enabled":"#)
            body.bool(evaluation.autoRenewEnabled)
            body.raw(#","original_transaction_id":"#)
            body.string(purchase.originalTransactionId)
            body.raw(#","environment":"#)
            body.string(purchase.environment.rawValue)
            body.raw(#","entitlements":"#)
            body.strings(evaluation.status == .active ? evaluated.owned.entitlements : [])
            body.raw(#","in_grace_period":"#)
            body.bool(evaluation.inGracePeriod)
            body.raw(#","in_billing_retry":"#)
            body.bool(evaluation.inBillingRetry)
            body.raw(#","grace_period_expires_date":"#)
            body.dateOrNull(renewal?.gracePeriodExpiresDate)
            body.raw(#","expiration_intent":"#)
            body.intOrNull(renewal?.expirationIntent.map(Int64.init))
            body.raw(#","auto_renew_product_id":"#)
            body.stringOrNull(renewal?.autoRenewProductId)
            body.raw(#","ownership_type":"#)
            body.stringOrNull(purchase.ownershipType?.rawValue)
            body.raw(#","revocation_date":"#)
            body.dateOrNull(purchase.revocationDate)
            if let type = purchase.revocationType {
                // Shown as such: a partial refund (REFUND_PRORATED) keeps the entitlement.
                body.raw(#","revocation_type":"#)
                body.string(type.rawValue)
                body.raw(#","revocation_percentage":"#)
                body.intOrNull(purchase.revocationPercentage)
                body.raw(#","partial_refund":"#)
                body.bool(type == .refundProrated)
            }
            body.raw("}")
        }
        body.raw("]")
        // Only for users with standing manual grants (as app_purchases below): other answers keep their shape.
        if !summary.grants.isEmpty {
            body.raw(#","grants":["#)
            for (i, evaluated) in summary.grants.enumerated() {
                if i > 0 { body.raw(",") }
                let grant = evaluated.grant
                body.raw(#"{"source":"grant","id":"#)
                body.string(grant.id.uuidString.lowercased())
                body.raw(#","entitlement":"#)
                body.string(grant.entitlement)
                body.raw(#","expires_at":"#)
                body.dateOrNull(grant.expiresAt)
                body.raw(#","created_at":"#)
                body.date(grant.createdAt)
                body.raw(#","active":"#)
                body.bool(evaluated.active)
                body.raw("}")
            }
            body.raw("]")
        }
        // Only for users with app transactions: every other answer keeps its published shape byte for byte.
        if !summary.appPurchases.isEmpty {
            body.raw(#","app_purchases":["#)
            for (i, grant) in summary.appPurchases.enumerated() {
                if i > 0 { body.raw(",") }
                let app = grant.appTransaction
                body.raw(#"{"source":"app_purchase","app_transaction_id":"#)
                body.string(app.appTransactionId)
                body.raw(#","environment":"#)
                body.string(app.environment.rawValue)
                body.raw(#","original_application_version":"#)
                body.stringOrNull(app.originalApplicationVersion)
                body.raw(#","original_purchase_date":"#)
                body.dateOrNull(app.originalPurchaseDate)
                body.raw(#","entitlements":"#)
                body.strings(grant.entitlements)
                body.raw(#","consent_rescinded_at":"#)
                body.dateOrNull(app.consentRescindedAt)
                body.raw("}")
            }
            body.raw(#"],"consent_rescinded":"#)
            body.bool(summary.consentRescindedAt != nil)
            body.raw(#","consent_rescinded_at":"#)
            body.dateOrNull(summary.consentRescindedAt)
        }
        body.raw("}")
        return body.bytes
    }
}
