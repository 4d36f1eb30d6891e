import Domain
import Foundation
import HTTPCore
import JSON

extension APIHandlers {
    static let createSuggestion = "Request body requires name (string) and bundle_id (string). Optional: app_apple_id "
        + "(integer or null), environments ([\"Production\", \"Sandbox\"]), transfer_policy (transfer, share, block), "
        + "allow_xcode (boolean), require_secret_key_for_reads (boolean)."
    static let updateSuggestion = "Send at least one of: name, bundle_id, app_apple_id (integer or null), environments, "
        + "transfer_policy (transfer, share, block), allow_xcode, require_secret_key_for_reads."
    static let productSuggestion = "Request body requires entitlements (array of strings), e.g. {\"entitlements\": [\"pro\"]}."
    static let projectIdSuggestion = "Use the project's id (a UUID) from GET /v1/admin/projects."
    static let environmentNames = [StoreEnvironment.production.rawValue, StoreEnvironment.sandbox.rawValue]
    static let policyNames = TransferPolicy.allCases.map(\.rawValue)

    /// `POST /v1/admin/projects`: create a tenant; the secret key appears only in this response.
    func createProject(_ request: Request) throws -> Response {
        try Auth.authorizeAdmin(request, adminDigest: adminDigest, hasher: deps.hasher)
        let body = try RequestBody.object(request, suggestion: Self.createSuggestion)
        var fields = FieldValidator(body)
        let name = fields.string("name", required: true, maxLength: 200)
        let bundleId = fields.string("bundle_id", required: true, maxLength: 255)
        let settings = Self.settings(&fields)
        try fields.check(suggestion: Self.createSuggestion)
        guard let name, let bundleId else { throw HTTPError.validation([], suggestion: Self.createSuggestion) }

        var new = NewProject(name: name, bundleId: bundleId)
        if let appAppleId = settings.appAppleId { new.appAppleId = appAppleId }
        if let environments = settings.environments { new.environments = environments }
        if let policy = settings.transferPolicy { new.transferPolicy = policy }
        if let allowXcode = settings.allowXcode { new.allowXcode = allowXcode }
        if let require = settings.requireSecretKeyForReads { new.requireSecretKeyForReads = require }

        let keys = ProjectKeys.generate()
        let project = try deps.projects.createProject(
            new, publicKey: keys.publicKey, secretKeyHash: deps.hasher.hash(keys.secretKey), now: deps.now())
        return Response.json(201, Self.projectBody(project, secretKey: keys.secretKey))
    }

    /// `GET /v1/admin/projects`.
    func listProjects(_ request: Request) throws -> Response {
        try Auth.authorizeAdmin(request, adminDigest: adminDigest, hasher: deps.hasher)
        let projects = try deps.projects.allProjects()
        var body = JSONBody(capacity: 64 + 400 * projects.count)
        body.raw(#"{"projects":["#)
        for (i, project) in projects.enumerated() {
            if i > 0 { body.raw(",") }
            Self.writeProject(project, secretKey: nil, into: &body)
        }
        body.raw("]}")
        return Response.json(200, body.bytes)
    }

    /// `GET /v1/admin/projects/:id`.
    func showProject(_ request: Request) throws -> Response {
        try Auth.authorizeAdmin(request, adminDigest: adminDigest, hasher: deps.hasher)
        let id = try Self.projectId(request)
        guard let project = try deps.projects.project(id: id) else { throw HTTPError.projectNotFound }
        return Response.json(200, Self.projectBody(project, secretKey: nil))
    }

    /// `PATCH /v1/admin/projects/:id`: a validated partial update; `app_apple_id: null` clears it.
    func updateProject(_ request: Request) throws -> Response {
        try Auth.authorizeAdmin(request, adminDigest: adminDigest, hasher: deps.hasher)
        let id = try Self.projectId(request)
        let body = try RequestBody.object(request, suggestion: Self.updateSuggestion)
        guard !body.isEmpty else {
            throw HTTPError.validation([ErrorDetail(path: [], message: "At least one field is required")],
                                      suggestion: Self.updateSuggestion)
        }
        var fields = FieldValidator(body)
        var changes = ProjectChanges()
        changes.name = fields.string("name", required: false, maxLength: 200)
        changes.bundleId = fields.string("bundle_id", required: false, maxLength: 255)
        let settings = Self.settings(&fields)
        try fields.check(suggestion: Self.updateSuggestion)
        changes.appAppleId = settings.appAppleId
        changes.environments = settings.environments
        changes.transferPolicy = settings.transferPolicy
        changes.allowXcode = settings.allowXcode
        changes.requireSecretKeyForReads = settings.requireSecretKeyForReads
        guard let project = try deps.projects.updateProject(id: id, changes, now: deps.now()) else {
            throw HTTPError.projectNotFound
        }
        return Response.json(200, Self.projectBody(project, secretKey: nil))
    }

    /// `DELETE /v1/admin/projects/:id`: the project and all its data.
    func deleteProject(_ request: Request) throws -> Response {
        try Auth.authorizeAdmin(request, adminDigest: adminDigest, hasher: deps.hasher)
        let id = try Self.projectId(request)
        guard try deps.projects.deleteProject(id: id) else { throw HTTPError.projectNotFound }
        return Response(status: 204)
    }

    /// `POST /v1/admin/projects/:id/rotate-keys`: both keys change; the old ones stop working at once.
    func rotateKeys(_ request: Request) throws -> Response {
        try Auth.authorizeAdmin(request, adminDigest: adminDigest, hasher: deps.hasher)
        let id = try Self.projectId(request)
        let keys = ProjectKeys.generate()
        guard let project = try deps.projects.rotateKeys(
            id: id, publicKey: keys.publicKey, secretKeyHash: deps.hasher.hash(keys.secretKey), now: deps.now())
        else { throw HTTPError.projectNotFound }
        return Response.json(200, Self.projectBody(project, secretKey: keys.secretKey))
    }

    /// `GET /v1/admin/projects/:id/products`.
    func listProducts(_ request: Request) throws -> Response {
        try Auth.authorizeAdmin(request, adminDigest: adminDigest, hasher: deps.hasher)
        let id = try Self.projectId(request)
        guard try deps.projects.project(id: id) != nil else { throw HTTPError.projectNotFound }
        let products = try deps.projects.products(projectId: id)
        var body = JSONBody(capacity: 32 + 96 * products.count)
        body.raw(#"{"products":["#)
        for (i, product) in products.enumerated() {
            if i > 0 { body.raw(",") }
            Self.writeProduct(product, into: &body)
        }
        body.raw("]}")
        return Response.json(200, body.bytes)
    }

    /// `PUT /v1/admin/projects/:id/products/:productId`: create or replace the product's entitlements.
    func putProduct(_ request: Request) throws -> Response {
        try Auth.authorizeAdmin(request, adminDigest: adminDigest, hasher: deps.hasher)
        let id = try Self.projectId(request)
        let productId = try Self.productId(request)
        let body = try RequestBody.object(request, suggestion: Self.productSuggestion)
        var fields = FieldValidator(body)
        let entitlements = fields.array("entitlements", required: true, maxItems: 100) { fields, value, path in
            fields.checkString(value, path: path, minLength: 1, maxLength: 128)
        }
        try fields.check(suggestion: Self.productSuggestion)
        guard try deps.projects.project(id: id) != nil else { throw HTTPError.projectNotFound }
        let stored = try deps.projects.setProduct(
            projectId: id, ProductMapping(productId: productId, entitlements: entitlements ?? []), now: deps.now())
        var out = JSONBody(capacity: 96)
        Self.writeProduct(stored, into: &out)
        return Response.json(200, out.bytes)
    }

    /// `DELETE /v1/admin/projects/:id/products/:productId`.
    func deleteProduct(_ request: Request) throws -> Response {
        try Auth.authorizeAdmin(request, adminDigest: adminDigest, hasher: deps.hasher)
        let id = try Self.projectId(request)
        let productId = try Self.productId(request)
        guard try deps.projects.project(id: id) != nil else { throw HTTPError.projectNotFound }
        guard try deps.projects.deleteProduct(projectId: id, productId: productId) else {
            throw HTTPError.productNotFound
        }
        return Response(status: 204)
    }

    // MARK: - Parsing

    /// The optional settings shared by create and update.
    struct Settings {
        var appAppleId: Int64??
        var environments: [StoreEnvironment]?
        var transferPolicy: TransferPolicy?
        var allowXcode: Bool?
        var requireSecretKeyForReads: Bool?
    }

    static func settings(_ fields: inout FieldValidator) -> Settings {
        var settings = Settings()
        // No maxItems for environments (the contract has none): duplicates collapse and the body limit bounds work.
        settings.appAppleId = fields.nullableInt("app_apple_id", minimum: 1)
        if let names = fields.array("environments", required: false, minItems: 1, element: {
            fields, value, path in fields.checkEnum(value, path: path, environmentNames)
        }) {
            var unique: [StoreEnvironment] = []
            for name in names where !unique.contains(StoreEnvironment(rawValue: name)) {
                unique.append(StoreEnvironment(rawValue: name))
            }
            settings.environments = unique
        }
        settings.transferPolicy = fields.enumeration("transfer_policy", policyNames).flatMap(TransferPolicy.init)
        settings.allowXcode = fields.bool("allow_xcode")
        settings.requireSecretKeyForReads = fields.bool("require_secret_key_for_reads")
        return settings
    }

    static func projectId(_ request: Request) throws(HTTPError) -> UUID {
        guard let raw = request.pathParameters["id"], let id = UUID(uuidString: raw) else {
            throw HTTPError.validation([ErrorDetail(path: ["id"], message: "Invalid uuid")],
                                      suggestion: projectIdSuggestion)
        }
        return id
    }

    static func productId(_ request: Request) throws(HTTPError) -> String {
        let productId = request.pathParameters["productId"] ?? ""
        let scalars = productId.unicodeScalars.count
        guard scalars >= 1, scalars <= 256 else {
            throw HTTPError.validation(
                [ErrorDetail(path: ["productId"], message: scalars == 0
                    ? "String must contain at least 1 character(s)"
                    : "String must contain at most 256 character(s)")],
                suggestion: "Put the App Store product id (1 to 256 characters) in the URL path.")
        }
        return productId
    }

    // MARK: - Rendering

    static func projectBody(_ project: Project, secretKey: String?) -> [UInt8] {
        var body = JSONBody(capacity: 448)
        writeProject(project, secretKey: secretKey, into: &body)
        return body.bytes
    }

    static func writeProject(_ project: Project, secretKey: String?, into body: inout JSONBody) {
        body.raw(#"{"id":"#)
        body.string(project.id.uuidString.lowercased())
        body.raw(#","name":"#)
        body.string(project.name)
        body.raw(#","bundle_id":"#)
        body.string(project.bundleId)
        body.raw(#","app_apple_id":"#)
        body.intOrNull(project.appAppleId)
        body.raw(#","environments":"#)
        body.strings(project.environments.map(\.rawValue))
        body.raw(#","transfer_policy":"#)
        body.string(project.transferPolicy.rawValue)
        body.raw(#","allow_xcode":"#)
        body.bool(project.allowXcode)
        body.raw(#","require_secret_key_for_reads":"#)
        body.bool(project.requireSecretKeyForReads)
        body.raw(#","public_key":"#)
        body.string(project.publicKey)
        body.raw(#","created_at":"#)
        body.date(project.createdAt)
        body.raw(#","updated_at":"#)
        body.date(project.updatedAt)
        if let secretKey {
            body.raw(#","secret_key":"#)
            body.string(secretKey)
        }
        body.raw("}")
    }

    static func writeProduct(_ product: ProductMapping, into body: inout JSONBody) {
        body.raw(#"{"product_id":"#)
        body.string(product.productId)
        body.raw(#","entitlements":"#)
        body.strings(product.entitlements)
        body.raw("}")
    }
}
