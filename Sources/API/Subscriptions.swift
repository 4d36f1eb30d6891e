import Domain
import Foundation
import HTTPCore

/// `GET /v1/subscriptions/:publicKey/:userId`: what a user is entitled to now.
struct SubscriptionsController: APIController {
    let keys: KeyAuth
    let purchases: any PurchaseStore
    let now: @Sendable () -> Date

    var routes: [APIRoute] {
        [APIRoute(.get, "/v1/subscriptions/:publicKey/:userId", .appRead, publicKey: Self.subscriptionsKeySuggestion,
                  getSubscriptions).answeringFromMemory(subscriptionsFromMemory)]
    }

    /// The published contract's exact text (anchors §0).
    static let subscriptionsKeySuggestion = "Use a valid public key (pk_...) in the URL path."

    /// `GET /v1/subscriptions/:publicKey/:userId`: what the user is entitled to now, computed from stored dates.
    func getSubscriptions(_ request: Request, _ project: Project) throws -> Response {
        try keys.authorizeRead(request, project: project)
        let userId = try PathParameters.userId(
            request, project: project,
            suggestion: "Put the user id (1 to 256 characters) in the URL path: GET /v1/subscriptions/:public_key/:user_id.")
        let holdings = try purchases.holdings(userId: userId, project: project)
        return answer(userId: userId, holdings, project)
    }

    /// `getSubscriptions` from memory (on the event loop): nil, for the pool, when the request presents a secret key
    /// (checking it may read the database), the project requires one (refused there), the user id is refused, or the
    /// read cache has no current entry for the user.
    func subscriptionsFromMemory(_ request: Request, _ project: Project) -> Response? {
        guard request.headers["Authorization"] == nil, !project.requireSecretKeyForReads,
              let userId = try? PathParameters.userId(request, project: project, suggestion: ""),
              let holdings = purchases.holdingsInMemory(userId: userId, project: project) else { return nil }
        return answer(userId: userId, holdings, project)
    }

    /// The 200 answer for what `userId` holds.
    private func answer(userId: String, _ holdings: UserHoldings, _ project: Project) -> Response {
        let now = now()
        // A read cache's hit brings the answer an earlier read derived from the same holdings: sent again while
        // nothing it depends on has changed (`SummaryMemo`), so a hit neither summarizes nor encodes.
        if let body = holdings.memo.answer(holdings, for: project, userId: userId, at: now) {
            return Response.json(200, body)
        }
        let summary = UserEntitlementSummary.summarize(holdings, for: project, userId: userId, at: now)
        let body = Self.subscriptionsBody(userId: userId, summary)
        holdings.memo.keep(body, holdings, for: project, userId: userId, at: now)
        return Response.json(200, body)
    }

    /// The 200 body; each subscription's `entitlements` are what it grants now (empty unless active).
    static func subscriptionsBody(userId: String, _ summary: UserEntitlementSummary) -> [UInt8] {
        var body = JSONBody(capacity: 128 + 480 * summary.purchases.count)
        body.beginObject()
        body.field("user_id", userId)
        body.field("status", summary.status.rawValue)
        body.field("entitlements", summary.entitlements)
        body.array("subscriptions", summary.purchases) { evaluated, body in evaluated.write(into: &body) }
        // Only for users with standing manual grants (as app_purchases below): other answers keep their shape.
        if !summary.grants.isEmpty {
            body.array("grants", summary.grants) { evaluated, body in evaluated.write(into: &body) }
        }
        // Only for users with app transactions: every other answer keeps its published shape byte for byte.
        if !summary.appPurchases.isEmpty {
            body.array("app_purchases", summary.appPurchases) { grant, body in grant.write(into: &body) }
            body.field("consent_rescinded", summary.consentRescindedAt != nil)
            body.field("consent_rescinded_at", summary.consentRescindedAt)
        }
        body.endObject()
        return body.bytes
    }
}

extension EvaluatedPurchase {
    /// Writes the purchase as `GET /v1/subscriptions` lists it (`subscriptions[]`): its `entitlements` are what it
    /// grants now (empty unless active).
    func write(into body: inout JSONBody) {
        let purchase = owned.purchase
        let renewal = purchase.renewal
        body.beginObject()
        body.field("product_id", purchase.productId)
        body.field("status", evaluation.status.rawValue)
        body.field("current_period_end", purchase.expiresDate)
        body.field("auto_renew_enabled", evaluation.autoRenewEnabled)
        body.field("original_transaction_id", purchase.originalTransactionId)
        body.field("environment", purchase.environment.rawValue)
        body.field("entitlements", grants ? owned.entitlements : [])
        body.field("in_grace_period", evaluation.inGracePeriod)
        body.field("in_billing_retry", evaluation.inBillingRetry)
        body.field("grace_period_expires_date", renewal?.gracePeriodExpiresDate)
        body.field("expiration_intent", renewal?.expirationIntent.map(Int64.init))
        body.field("auto_renew_product_id", renewal?.autoRenewProductId)
        body.field("eligible_win_back_offer_ids", renewal?.eligibleWinBackOfferIds ?? [])
        body.field("ownership_type", purchase.ownershipType?.rawValue)
        body.field("revocation_date", purchase.revocationDate)
        if let type = purchase.revocationType {
            // Shown as such: a partial refund (REFUND_PRORATED) keeps the entitlement.
            body.field("revocation_type", type.rawValue)
            body.field("revocation_percentage", purchase.revocationPercentage)
            body.field("partial_refund", type == .refundProrated)
        }
        // Only for a purchase that grants nothing whatever its status (a Sandbox purchase of a user outside the
        // project's allowlist): every other answer keeps its shape.
        if let withheldReason { body.field("withheld_reason", withheldReason) }
        // Only for billing plans Apple names (commitment plans, API 1.21): other answers keep their shape.
        if purchase.billingPlan != nil || purchase.commitment != nil {
            body.field("billing_plan", purchase.billingPlan)
            if let commitment = purchase.commitment {
                body.key("commitment")
                body.beginObject()
                body.field("billing_period", commitment.billingPeriod)
                body.field("total_billing_periods", commitment.totalBillingPeriods)
                body.field("commitment_expires_date", commitment.expiresDate)
                body.field("will_renew", commitment.willRenew)
                body.endObject()
            } else {
                body.null("commitment")
            }
        }
        body.endObject()
    }
}

extension EvaluatedGrant {
    /// Writes the grant as `GET /v1/subscriptions` lists it (`grants[]`); the admin routes show the whole grant
    /// (`Grant.write(at:into:)`).
    func write(into body: inout JSONBody) {
        body.beginObject()
        body.field("source", "grant")
        body.field("id", grant.id.lowercasedText)
        body.field("entitlement", grant.entitlement)
        body.field("expires_at", grant.expiresAt)
        body.field("created_at", grant.createdAt)
        body.field("active", active)
        body.endObject()
    }
}

extension AppPurchaseGrant {
    /// Writes the app purchase as `GET /v1/subscriptions` lists it (`app_purchases[]`).
    func write(into body: inout JSONBody) {
        body.beginObject()
        body.field("source", "app_purchase")
        appTransaction.writeFacts(into: &body)
        body.field("entitlements", entitlements)
        body.field("consent_rescinded_at", appTransaction.consentRescindedAt)
        body.endObject()
    }
}
