import Domain

/// The JSON shapes of admin resources, for other front ends (the `bouncer project|product` CLI) to print exactly
/// what the admin API returns.
public enum Representations {
    /// A project as `GET /v1/admin/projects/:id` returns it; with `secretKey`, as creation and rotation return it.
    public static func project(_ project: Project, secretKey: String? = nil) -> [UInt8] {
        APIHandlers.projectBody(project, secretKey: secretKey)
    }

    /// A product mapping as `PUT /v1/admin/projects/:id/products/:productId` returns it.
    public static func product(_ product: ProductMapping) -> [UInt8] {
        var body = JSONBody(capacity: 128)
        APIHandlers.writeProduct(product, into: &body)
        return body.bytes
    }
}
