import Domain
import Foundation
import HTTPCore
import JSON

/// Retention Messaging hosted by Bouncer: Apple's Get Retention Message endpoint and the project's rules.
struct RetentionController: APIController {
    let projects: any ProjectStore
    let verifier: any SignedDataVerifying
    /// `nil` answers 503 on every route (on the public one Apple then shows the default message).
    let retention: RetentionMessaging?

    var routes: [APIRoute] {
        [
            // Apple is the only caller; it waits about 700 ms and shows the default message on any failure.
            APIRoute(.post, "/v1/retention/:publicKey", .client, publicKey: Self.keySuggestion,
                     errors: ErrorContext(signedData: .retentionRequest), postRealtimeRequest),
            APIRoute(.get, "/v1/admin/projects/:id/retention/rules", .adminAPI, access: .admin(.projectsRead), getRules),
            APIRoute(.put, "/v1/admin/projects/:id/retention/rules", .adminAPI, access: .admin(.projectsWrite), putRules),
            APIRoute(.post, "/v1/admin/projects/:id/retention/simulate", .adminAPI, access: .admin(.customersRead),
                     simulate),
            APIRoute(.get, "/v1/admin/projects/:id/retention/decisions", .adminAPI, access: .admin(.customersRead),
                     decisions),
        ]
    }

    static let requestSuggestion =
        "Request body requires signedPayload (string): the RealtimeRequestBody the App Store sends."
    static let keySuggestion =
        "Use the project's public key (pk_...) in the Get Retention Message URL you give Apple: "
        + "https://HOST/v1/retention/:public_key."
    static let rulesSuggestion = "Request body requires rules: an array (at most 100) of {name, when?, action}; when "
        + "holds optional product_ids, locale_prefixes (arrays of strings), min_tenure_days, max_tenure_days, "
        + "min_renewals, max_renewals, max_offers_used (integers 0 to 100000), refunded, in_billing_retry (booleans); "
        + "action holds message_id (a UUID) and at most one of alternate_product_id, promotional_offer_id."
    static let simulateSuggestion = "Request body requires product_id and locale, and exactly one of "
        + "original_transaction_id or user_id."

    /// `POST /v1/retention/:publicKey`: Apple's real-time request. 200 with exactly one of `message`,
    /// `alternateProduct`, `promotionalOffer`; any failure is a non-200 structured error, on which the App Store
    /// shows the product's default message (nothing unverified is recorded; a replay or stale request gets nothing).
    func postRealtimeRequest(_ request: Request, _ project: Project) throws -> Response {
        let payload = try RequestBody.signedPayload(request, suggestion: Self.requestSuggestion)
        let verified = try verifier.verifyRetentionRequest(payload, for: project)
        let answer = try service().answer(verified, for: project)
        return Response.json(200, Self.realtimeResponse(answer))
    }

    /// Apple's `RealtimeResponseBody`: one member, its `messageIdentifier` a lowercase UUID.
    static func realtimeResponse(_ answer: RetentionAnswer) -> [UInt8] {
        var out = JSONBody(capacity: 640)
        out.beginObject()
        switch answer.action {
        case .message(let messageId):
            out.key("message")
            out.beginObject()
            out.field("messageIdentifier", messageId.lowercasedText)
            out.endObject()
        case .alternateProduct(let productId, let messageId):
            out.key("alternateProduct")
            out.beginObject()
            out.field("messageIdentifier", messageId.lowercasedText)
            out.field("productId", productId)
            out.endObject()
        case .promotionalOffer(_, let messageId):
            out.key("promotionalOffer")
            out.beginObject()
            out.field("messageIdentifier", messageId.lowercasedText)
            out.field("promotionalOfferSignatureV2", answer.offerSignature)
            out.endObject()
        }
        out.endObject()
        return out.bytes
    }

    /// `GET /v1/admin/projects/:id/retention/rules`.
    func getRules(_ request: Request) throws -> Response {
        let rules = try service().rules(projectId: try PathParameters.projectId(request))
        return Response.json(200, JSONBody.list("rules", rules, capacity: 64 + 256 * rules.count, Self.writeRule))
    }

    /// `PUT /v1/admin/projects/:id/retention/rules`: replaces the list (first match wins).
    func putRules(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let body = try RequestBody.object(request, suggestion: Self.rulesSuggestion)
        let rules = try Self.parseRules(body)
        let service = try service()
        try RequestBody.translating(suggestion: Self.rulesSuggestion) { try service.replaceRules(projectId: id, rules) }
        return Response.json(200, JSONBody.list("rules", rules, capacity: 64 + 256 * rules.count, Self.writeRule))
    }

    /// `POST /v1/admin/projects/:id/retention/simulate`: the decision, rule and facts; writes nothing.
    func simulate(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        var fields = try FieldValidator(request, suggestion: Self.simulateSuggestion)
        let otid = fields.string("original_transaction_id", required: false, maxLength: 64)
        let userId = fields.string("user_id", required: false, maxLength: 256)
        let productId = fields.string("product_id", required: true, maxLength: ProjectRules.productIdLength.upperBound)
        let locale = fields.string("locale", required: true, maxLength: 35)
        if fields.has("original_transaction_id") == fields.has("user_id") {
            fields.fail([], "Exactly one of original_transaction_id or user_id is required")
        }
        try fields.check(suggestion: Self.simulateSuggestion)
        guard let productId, let locale else { throw HTTPError.validation([], suggestion: Self.simulateSuggestion) }
        let s = try service().simulate(projectId: id, originalTransactionId: otid, userId: userId,
                                       productId: productId, locale: locale)
        var out = JSONBody(capacity: 1024)
        out.beginObject()
        out.key("decision")
        out.beginObject()
        out.field("action", s.decision.action?.kind ?? "default")
        out.field("rule_index", s.decision.ruleIndex.map { Int64($0) })
        out.field("rule_name", s.decision.ruleName)
        out.field("message_id", s.decision.action?.messageId.lowercasedText)
        if case .alternateProduct(let product, _)? = s.decision.action { out.field("alternate_product_id", product) }
        if case .promotionalOffer(let offer, _)? = s.decision.action { out.field("promotional_offer_id", offer) }
        out.field("reason", s.decision.reason)
        out.endObject()
        out.key("facts")
        out.beginObject()
        out.field("original_transaction_id", s.originalTransactionId)
        out.field("purchase_known", s.facts.purchaseKnown)
        out.field("user_id", s.facts.userId)
        out.field("product_id", s.facts.productId)
        out.field("locale", s.facts.locale)
        out.field("tenure_days", s.tenureDays.map { Int64($0) })
        out.field("renewals", s.facts.renewals.map { Int64($0) })
        out.field("refunded", s.facts.refunded)
        out.field("in_billing_retry", s.facts.inBillingRetry)
        out.field("offers_used", Int64(s.facts.offersUsed))
        out.endObject()
        out.endObject()
        return Response.json(200, out.bytes)
    }

    /// `GET /v1/admin/projects/:id/retention/decisions`: the latest decisions (newest first, at most 50).
    func decisions(_ request: Request) throws -> Response {
        let decisions = try service().decisions(projectId: try PathParameters.projectId(request))
        return Response.json(200, JSONBody.list("decisions", decisions, capacity: 64 + 256 * decisions.count) { d, body in
            body.object {
                $0.field("original_transaction_id", d.originalTransactionId)
                $0.field("product_id", d.productId)
                $0.field("action", d.action)
                $0.field("reason", d.reason)
                $0.field("decided_at", d.at)
            }
        })
    }

    private func service() throws -> RetentionMessaging {
        try unwired(retention, "Retention messaging is not configured.", "retention")
    }

    // MARK: Rules as JSON

    static func writeRule(_ rule: RetentionRule, into body: inout JSONBody) {
        body.beginObject()
        body.field("name", rule.name)
        body.key("when")
        body.beginObject()
        let w = rule.when
        if let v = w.productIds { body.key("product_ids"); body.strings(v) }
        if let v = w.localePrefixes { body.key("locale_prefixes"); body.strings(v) }
        if let v = w.minTenureDays { body.field("min_tenure_days", Int64(v)) }
        if let v = w.maxTenureDays { body.field("max_tenure_days", Int64(v)) }
        if let v = w.minRenewals { body.field("min_renewals", Int64(v)) }
        if let v = w.maxRenewals { body.field("max_renewals", Int64(v)) }
        if let v = w.refunded { body.field("refunded", v) }
        if let v = w.inBillingRetry { body.field("in_billing_retry", v) }
        if let v = w.maxOffersUsed { body.field("max_offers_used", Int64(v)) }
        body.endObject()
        body.key("action")
        body.beginObject()
        body.field("message_id", rule.action.messageId.lowercasedText)
        if case .alternateProduct(let product, _) = rule.action { body.field("alternate_product_id", product) }
        if case .promotionalOffer(let offer, _) = rule.action { body.field("promotional_offer_id", offer) }
        body.endObject()
        body.endObject()
    }

    /// The rules of a PUT body; every type problem at once (bounds are `RetentionRules.problems`, in the use case).
    static func parseRules(_ body: JSONObject) throws -> [RetentionRule] {
        var fields = FieldValidator(body)
        var rules: [RetentionRule] = []
        guard case .array(let items)? = body["rules"] else {
            fields.fail(["rules"], body["rules"] == nil ? "Required" : "Expected array")
            try fields.check(suggestion: rulesSuggestion)
            return []
        }
        if items.count > RetentionRules.maxRules {
            fields.fail(["rules"], "Array must contain at most \(RetentionRules.maxRules) element(s)")
            try fields.check(suggestion: rulesSuggestion)
        }
        for (index, item) in items.enumerated() {
            let path = ["rules", String(index)]
            guard case .object(let object) = item else { fields.fail(path, "Expected object"); continue }
            var rule = FieldValidator(object)
            let name = rule.string("name", required: true, maxLength: RetentionRules.nameLength.upperBound)
            var when = FieldValidator(JSONObject([]))
            if let value = object["when"] {
                if case .object(let o) = value { when = FieldValidator(o) } else { rule.fail(["when"], "Expected object") }
            }
            func strings(_ key: String) -> [String]? {
                when.array(key, required: false, minItems: 1, maxItems: RetentionRules.maxListItems) { v, item, p in
                    v.checkString(item, path: p, minLength: 1, maxLength: 256)
                }
            }
            let condition = RetentionCondition(
                productIds: strings("product_ids"), localePrefixes: strings("locale_prefixes"),
                minTenureDays: when.int("min_tenure_days"), maxTenureDays: when.int("max_tenure_days"),
                minRenewals: when.int("min_renewals"), maxRenewals: when.int("max_renewals"),
                refunded: when.bool("refunded"), inBillingRetry: when.bool("in_billing_retry"),
                maxOffersUsed: when.int("max_offers_used"))
            var action = FieldValidator(JSONObject([]))
            if case .object(let o)? = object["action"] { action = FieldValidator(o) } else {
                rule.fail(["action"], object["action"] == nil ? "Required" : "Expected object")
            }
            let messageId = object["action"] == nil ? nil : action.uuid("message_id")
            if object["action"] != nil, !action.has("message_id") { action.fail(["message_id"], "Required") }
            let alternate = action.string("alternate_product_id", required: false)
            let offer = action.string("promotional_offer_id", required: false)
            if action.has("alternate_product_id"), action.has("promotional_offer_id") {
                action.fail([], "At most one of alternate_product_id or promotional_offer_id")
            }
            for detail in rule.details { fields.fail(path + detail.path, detail.message) }
            for detail in when.details { fields.fail(path + ["when"] + detail.path, detail.message) }
            for detail in action.details { fields.fail(path + ["action"] + detail.path, detail.message) }
            guard let name, let messageId else { continue }
            let kind: RetentionAction = alternate.map { .alternateProduct(productId: $0, messageId: messageId) }
                ?? offer.map { .promotionalOffer(offerId: $0, messageId: messageId) } ?? .message(messageId: messageId)
            rules.append(RetentionRule(name: name, when: condition, action: kind))
        }
        try fields.check(suggestion: rulesSuggestion)
        return rules
    }
}
