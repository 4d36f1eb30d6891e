import Domain
import Foundation
import HTTPCore

/// Extend the renewal date of every eligible subscriber of a product at Apple, and follow Apple's progress.
struct MassRenewalExtensionsController: APIController {
    let extensions: MassRenewalExtensions

    var routes: [APIRoute] {
        [
            APIRoute(.post, "/v1/admin/projects/:id/products/:productId/extend", .adminAPI,
                     access: .admin(.customersWrite), extend),
            APIRoute(.get, "/v1/admin/projects/:id/products/:productId/extend/:requestId", .adminAPI,
                     access: .admin(.customersRead), status),
        ]
    }

    static let suggestion = "Request body requires extend_by_days (integer 1 to 90) and reason_code (integer: 0 "
        + "undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage). Optional: storefronts (ISO 3166-1 "
        + "alpha-3 codes, e.g. [\"USA\", \"FRA\"]; omitted: every storefront), environment (Production or Sandbox)."
    static let requestIdSuggestion = "Use the request_identifier (a UUID) that POST "
        + "/v1/admin/projects/{id}/products/{productId}/extend returned."

    func extend(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let productId = request.pathParameters["productId"] ?? ""
        var fields = try FieldValidator(request, suggestion: Self.suggestion)
        let (days, reason) = AppStoreActionsController.extensionFields(&fields)
        let storefronts = fields.array("storefronts", required: false, minItems: 1,
                                       maxItems: MassRenewalExtensions.maxStorefronts) { fields, value, path in
            guard let text = value.stringValue else {
                fields.fail(path, "Expected string")
                return nil
            }
            return text
        }
        let environment = fields.enumeration("environment", [StoreEnvironment.production.rawValue,
                                                             StoreEnvironment.sandbox.rawValue])
            .map(StoreEnvironment.init(rawValue:))
        fields.add(MassRenewalExtensions.problems(extendByDays: days, reasonCode: reason, storefronts: storefronts))
        try fields.check(suggestion: Self.suggestion)
        guard let days, let reason else {
            throw HTTPError.validation([ErrorDetail(path: [], message: "Required")], suggestion: Self.suggestion)
        }
        let record = try RequestBody.translating(suggestion: Self.suggestion) {
            try extensions.extend(projectId: id, productId: productId, extendByDays: days, reasonCode: reason,
                                  storefronts: storefronts, environment: environment)
        }
        return Response.json(200, Self.body(record))
    }

    func status(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let requestId = try PathParameters.uuid(request, "requestId", suggestion: Self.requestIdSuggestion)
        let productId = request.pathParameters["productId"] ?? ""
        let record = try RequestBody.translating(suggestion: Self.requestIdSuggestion) {
            try extensions.status(projectId: id, productId: productId, requestIdentifier: requestId)
        }
        return Response.json(200, Self.body(record))
    }

    static func body(_ record: MassRenewalExtensionRecord) -> [UInt8] {
        var body = JSONBody(capacity: 384)
        body.beginObject()
        body.field("request_identifier", record.requestIdentifier.lowercasedText)
        body.field("product_id", record.productId)
        body.field("environment", record.environment.rawValue)
        body.field("extend_by_days", record.extendByDays)
        body.field("reason_code", record.reasonCode)
        if let storefronts = record.storefronts { body.field("storefronts", storefronts) } else { body.null("storefronts") }
        body.field("complete", record.status.complete)
        body.field("complete_date", record.status.completeDate)
        body.field("succeeded_count", record.status.succeededCount)
        body.field("failed_count", record.status.failedCount)
        body.field("created_at", record.createdAt)
        body.field("checked_at", record.checkedAt)
        body.endObject()
        return body.bytes
    }
}
