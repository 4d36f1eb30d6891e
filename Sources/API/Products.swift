import Domain
import Foundation
import HTTPCore

/// `/v1/admin/projects/:id/products[/:productId]`: which entitlements each App Store product grants.
struct ProductsController: APIController {
    /// The admin use cases (shared with the CLI), at this server's clock.
    let administration: ProjectAdministration

    var routes: [APIRoute] {
        [
            APIRoute(.get, "/v1/admin/projects/:id/products", .adminAPI, access: .admin(.projectsRead), listProducts),
            APIRoute(.put, "/v1/admin/projects/:id/products/:productId", .adminAPI, access: .admin(.productsWrite), putProduct),
            APIRoute(.delete, "/v1/admin/projects/:id/products/:productId", .adminAPI, access: .admin(.productsWrite), deleteProduct),
        ]
    }

    static let productSuggestion = "Request body requires entitlements (array of at most 100 strings), "
        + "e.g. {\"entitlements\": [\"pro\"]}."
    static let productIdSuggestion = "Put the App Store product id (1 to 256 characters) in the URL path."

    /// `GET /v1/admin/projects/:id/products`.
    func listProducts(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let products = try administration.products(projectId: id)
        return Response.json(200, Self.productsBody(products))
    }

    /// `PUT /v1/admin/projects/:id/products/:productId`: create or replace the product's entitlements.
    func putProduct(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let productId = try Self.productId(request)
        var fields = try FieldValidator(request, suggestion: Self.productSuggestion)
        let entitlements = fields.array("entitlements", required: true) { fields, value, path in
            guard let entitlement = fields.checkString(value, path: path, minLength: 0, maxLength: nil) else {
                return nil
            }
            let problems = ProjectRules.problems(entitlement: entitlement, at: Int(path.last ?? "") ?? 0)
            fields.add(problems)
            return problems.isEmpty ? entitlement : nil
        }
        if let entitlements, entitlements.count > ProjectRules.maxEntitlements {
            fields.add(ProjectRules.problems(entitlements: entitlements))
        }
        try fields.check(suggestion: Self.productSuggestion)
        let stored = try RequestBody.translating(suggestion: Self.productSuggestion) {
            try administration.setProduct(projectId: id, productId: productId, entitlements: entitlements ?? [])
        }
        var out = JSONBody(capacity: 96)
        Self.writeProduct(stored, into: &out)
        return Response.json(200, out.bytes)
    }

    /// `DELETE /v1/admin/projects/:id/products/:productId`.
    func deleteProduct(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let productId = try Self.productId(request)
        try administration.deleteProduct(projectId: id, productId: productId)
        return Response(status: 204)
    }

    static func productId(_ request: Request) throws(HTTPError) -> String {
        let productId = request.pathParameters["productId"] ?? ""
        let problems = ProjectRules.problems(productId: productId)
        guard problems.isEmpty else {
            throw HTTPError.validation(problems.map(ErrorDetail.init),
                                      suggestion: productIdSuggestion)
        }
        return productId
    }

    /// `{"products":[…]}`, as `GET /v1/admin/projects/:id/products` lists them.
    static func productsBody(_ products: [ProductMapping]) -> [UInt8] {
        JSONBody.list("products", products, capacity: 32 + 96 * products.count, writeProduct)
    }

    static func writeProduct(_ product: ProductMapping, into body: inout JSONBody) {
        body.beginObject()
        body.field("product_id", product.productId)
        body.field("entitlements", product.entitlements)
        body.endObject()
    }
}
