import Domain
import Foundation
import HTTPCore

/// Apple's side of Retention Messaging for a project (`/v1/admin/projects/:id/retention/…`): messages, images,
/// default messages, the Realtime URL and the performance test, each a call to Apple with the project's
/// credentials (`Domain.RetentionMessageAdministration`). `environment` defaults to Sandbox, where Apple approves at
/// once and the performance test runs.
struct RetentionMessagesController: APIController {
    /// `nil` (no retention store wired) answers 503 on every route.
    let administration: RetentionMessageAdministration?

    var routes: [APIRoute] {
        let base = "/v1/admin/projects/:id/retention"
        return [
            APIRoute(.get, base + "/messages", .adminAPI, access: .admin(.projectsRead), listMessages),
            APIRoute(.put, base + "/messages/:messageId", .adminAPI, access: .admin(.projectsWrite), uploadMessage),
            APIRoute(.delete, base + "/messages/:messageId", .adminAPI, access: .admin(.projectsWrite), deleteMessage),
            APIRoute(.get, base + "/images", .adminAPI, access: .admin(.projectsRead), listImages),
            APIRoute(.put, base + "/images/:imageId", .adminAPI, access: .admin(.projectsWrite),
                     maxBodyBytes: RetentionMessageAdministration.maxImageBytes, uploadImage),
            APIRoute(.delete, base + "/images/:imageId", .adminAPI, access: .admin(.projectsWrite), deleteImage),
            APIRoute(.put, base + "/default-messages/:productId/:locale", .adminAPI, access: .admin(.projectsWrite),
                     setDefaultMessage),
            APIRoute(.delete, base + "/default-messages/:productId/:locale", .adminAPI,
                     access: .admin(.projectsWrite), deleteDefaultMessage),
            APIRoute(.put, base + "/realtime-url", .adminAPI, access: .admin(.projectsWrite), setRealtimeURL),
            APIRoute(.post, base + "/performance-test", .adminAPI, access: .admin(.projectsWrite), performanceTest),
        ]
    }

    static let environmentSuggestion = "Optional: environment (Production or Sandbox; default Sandbox), as a query "
        + "parameter or, for JSON bodies, a member."
    static let messageSuggestion = "Request body requires header (1 to 66 characters) and body (1 to 144); optional "
        + "image_id (a UUID of an uploaded image) with alt_text (1 to 150), environment (Production or Sandbox; "
        + "default Sandbox). The path's messageId is a new UUID."
    static let imageSuggestion = "Send the PNG itself as the body (Content-Type: image/png, at most 1 MiB); the "
        + "path's imageId is a new UUID; optional query parameter environment (Production or Sandbox; default Sandbox)."
    static let defaultSuggestion = "Request body requires message_id (the UUID of an approved message); optional "
        + "environment (Production or Sandbox; default Sandbox). The path names the product id and a locale (en-US)."
    static let urlSuggestion = "Request body requires url (https, e.g. https://HOST/v1/retention/<public key>); "
        + "optional environment (Production or Sandbox; default Sandbox). Production needs a passed performance test."
    static let testSuggestion = "Request body requires original_transaction_id (a Sandbox purchase's, digits only); "
        + "Apple runs the performance test in Sandbox only."
    static let idSuggestion = "Use a UUID (e.g. from uuidgen) as the message or image id."

    func listMessages(_ request: Request) throws -> Response {
        try list(request, "messages", "message_id") { try service().messages(projectId: $0, environment: $1) }
    }

    func listImages(_ request: Request) throws -> Response {
        try list(request, "images", "image_id") { try service().images(projectId: $0, environment: $1) }
    }

    /// `{key: [{idKey, state}]}`: Apple's messages or images of the environment asked.
    private func list(_ request: Request, _ key: StaticString, _ idKey: StaticString,
                      _ fetch: (UUID, StoreEnvironment) throws -> [RetentionAssetState]) throws -> Response {
        let id = try PathParameters.projectId(request)
        let environment = try Self.environment(request)
        let assets = try RequestBody.translating(suggestion: Self.environmentSuggestion) { try fetch(id, environment) }
        return Response.json(200, Self.assetsBody(key, idKey, assets))
    }

    /// `{"messages"|"images": [{"message_id"|"image_id", "state"}]}`.
    static func assetsBody(_ key: StaticString, _ idKey: StaticString, _ assets: [RetentionAssetState]) -> [UInt8] {
        JSONBody.list(key, assets, capacity: 64 + 80 * assets.count) { asset, body in
            body.object {
                $0.field(idKey, asset.id.lowercasedText)
                $0.field("state", asset.state)
            }
        }
    }

    func uploadMessage(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let messageId = try PathParameters.uuid(request, "messageId", suggestion: Self.idSuggestion)
        var fields = try FieldValidator(request, suggestion: Self.messageSuggestion)
        let header = fields.string("header", required: true,
                                   maxLength: RetentionMessageAdministration.headerLength.upperBound)
        let text = fields.string("body", required: true, maxLength: RetentionMessageAdministration.bodyLength.upperBound)
        let imageId = fields.uuid("image_id")
        let altText = fields.string("alt_text", required: fields.has("image_id"),
                                    maxLength: RetentionMessageAdministration.altTextLength.upperBound)
        if fields.has("alt_text"), !fields.has("image_id") { fields.fail(["image_id"], "Required with alt_text") }
        let environment = Self.bodyEnvironment(&fields)
        try fields.check(suggestion: Self.messageSuggestion)
        guard let header, let text else { throw HTTPError.validation([], suggestion: Self.messageSuggestion) }
        let image = imageId.flatMap { imageId in altText.map { (id: imageId, altText: $0) } }
        let upload = RetentionMessageUpload(messageId: messageId, header: header, body: text, image: image)
        try RequestBody.translating(suggestion: Self.messageSuggestion) {
            try service().uploadMessage(projectId: id, upload, environment: environment)
        }
        return Response.json(200, Self.messageBody(upload, environment))
    }

    /// An uploaded message, as `PUT …/retention/messages/:messageId` answers it.
    static func messageBody(_ upload: RetentionMessageUpload, _ environment: StoreEnvironment) -> [UInt8] {
        var body = JSONBody(capacity: 512)
        body.object {
            $0.field("message_id", upload.messageId.lowercasedText)
            $0.field("environment", environment.rawValue)
            $0.field("header", upload.header)
            $0.field("body", upload.body)
            $0.field("image_id", upload.image?.id.lowercasedText)
            $0.field("alt_text", upload.image?.altText)
        }
        return body.bytes
    }

    func deleteMessage(_ request: Request) throws -> Response {
        try delete(request, "messageId") { try service().deleteMessage(projectId: $0, messageId: $1, environment: $2) }
    }

    /// `DELETE` of a message or image (the path's `parameter`): 204 once Apple deleted it.
    private func delete(_ request: Request, _ parameter: String,
                        _ call: (UUID, UUID, StoreEnvironment) throws -> Void) throws -> Response {
        let id = try PathParameters.projectId(request)
        let assetId = try PathParameters.uuid(request, parameter, suggestion: Self.idSuggestion)
        let environment = try Self.environment(request)
        try RequestBody.translating(suggestion: Self.environmentSuggestion) { try call(id, assetId, environment) }
        return Response(status: 204)
    }

    func uploadImage(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let imageId = try PathParameters.uuid(request, "imageId", suggestion: Self.idSuggestion)
        let environment = try Self.environment(request)
        guard let type = request.headers["Content-Type"], type.lowercased().hasPrefix("image/png") else {
            throw HTTPError.unsupportedMediaType
        }
        try RequestBody.translating(suggestion: Self.imageSuggestion) {
            try service().uploadImage(projectId: id, imageId: imageId, png: request.body, environment: environment)
        }
        return Response.json(200, Self.imageBody(imageId, environment, bytes: request.body.count))
    }

    /// An uploaded image, as `PUT …/retention/images/:imageId` answers it.
    static func imageBody(_ imageId: UUID, _ environment: StoreEnvironment, bytes: Int) -> [UInt8] {
        var body = JSONBody(capacity: 160)
        body.object {
            $0.field("image_id", imageId.lowercasedText)
            $0.field("environment", environment.rawValue)
            $0.field("bytes", bytes)
        }
        return body.bytes
    }

    func deleteImage(_ request: Request) throws -> Response {
        try delete(request, "imageId") { try service().deleteImage(projectId: $0, imageId: $1, environment: $2) }
    }

    func setDefaultMessage(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let (productId, locale) = (request.pathParameters["productId"] ?? "", request.pathParameters["locale"] ?? "")
        var fields = try FieldValidator(request, suggestion: Self.defaultSuggestion)
        let messageId = fields.uuid("message_id")
        if !fields.has("message_id") { fields.fail(["message_id"], "Required") }
        let environment = Self.bodyEnvironment(&fields)
        try fields.check(suggestion: Self.defaultSuggestion)
        guard let messageId else { throw HTTPError.validation([], suggestion: Self.defaultSuggestion) }
        try RequestBody.translating(suggestion: Self.defaultSuggestion) {
            try service().setDefaultMessage(projectId: id, productId: productId, locale: locale,
                                                 messageId: messageId, environment: environment)
        }
        return Response.json(200, Self.defaultMessageBody(productId, locale, messageId, environment))
    }

    /// A configured default message, as `PUT …/retention/default-messages/:productId/:locale` answers it.
    static func defaultMessageBody(_ productId: String, _ locale: String, _ messageId: UUID,
                                   _ environment: StoreEnvironment) -> [UInt8] {
        var body = JSONBody(capacity: 256)
        body.object {
            $0.field("product_id", productId)
            $0.field("locale", locale)
            $0.field("message_id", messageId.lowercasedText)
            $0.field("environment", environment.rawValue)
        }
        return body.bytes
    }

    func deleteDefaultMessage(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let (productId, locale) = (request.pathParameters["productId"] ?? "", request.pathParameters["locale"] ?? "")
        let environment = try Self.environment(request)
        try RequestBody.translating(suggestion: Self.defaultSuggestion) {
            try service().deleteDefaultMessage(projectId: id, productId: productId, locale: locale,
                                                    environment: environment)
        }
        return Response(status: 204)
    }

    func setRealtimeURL(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        var fields = try FieldValidator(request, suggestion: Self.urlSuggestion)
        let url = fields.string("url", required: true, maxLength: RetentionMessageAdministration.maxURLLength)
        if let url { fields.add(RetentionMessageAdministration.urlProblems(url)) }
        let environment = Self.bodyEnvironment(&fields)
        try fields.check(suggestion: Self.urlSuggestion)
        guard let url else { throw HTTPError.validation([], suggestion: Self.urlSuggestion) }
        try RequestBody.translating(suggestion: Self.urlSuggestion) {
            try service().setRealtimeURL(projectId: id, url: url, environment: environment)
        }
        return Response.json(200, Self.realtimeURLBody(url, environment))
    }

    /// A configured Realtime URL, as `PUT …/retention/realtime-url` answers it.
    static func realtimeURLBody(_ url: String, _ environment: StoreEnvironment) -> [UInt8] {
        var body = JSONBody(capacity: 256)
        body.object {
            $0.field("url", url)
            $0.field("environment", environment.rawValue)
        }
        return body.bytes
    }

    func performanceTest(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        var fields = try FieldValidator(request, suggestion: Self.testSuggestion)
        let otid = fields.string("original_transaction_id", required: true, maxLength: 64)
        if fields.has("environment") {
            _ = fields.enumeration("environment", [StoreEnvironment.sandbox.rawValue])
        }
        try fields.check(suggestion: Self.testSuggestion)
        guard let otid else { throw HTTPError.validation([], suggestion: Self.testSuggestion) }
        let started = try RequestBody.translating(suggestion: Self.testSuggestion) {
            try service().startPerformanceTest(projectId: id, originalTransactionId: otid)
        }
        return Response.json(200, Self.performanceTestBody(started))
    }

    /// Apple's answer to Initiate Performance Test, as `POST …/retention/performance-test` returns it.
    static func performanceTestBody(_ started: PerformanceTestStarted) -> [UInt8] {
        var body = JSONBody(capacity: 384)
        body.object {
            $0.field("request_id", started.requestId)
            $0.field("environment", StoreEnvironment.sandbox.rawValue)
            $0.key("config")
            $0.object {
                $0.field("max_concurrent_requests", started.maxConcurrentRequests)
                $0.field("total_requests", started.totalRequests)
                $0.field("total_duration_ms", started.totalDuration)
                $0.field("response_time_threshold_ms", started.responseTimeThreshold)
                $0.field("success_rate_threshold_percent", started.successRateThreshold)
            }
        }
        return body.bytes
    }

    private func service() throws -> RetentionMessageAdministration {
        try unwired(administration, "Retention Messaging is not configured.", "retention")
    }

    /// The query's environment, Sandbox by default.
    static func environment(_ request: Request) throws(HTTPError) -> StoreEnvironment {
        try AppStoreActionsController.environmentQuery(request, suggestion: environmentSuggestion) ?? .sandbox
    }

    /// The body's `environment` member, Sandbox by default.
    static func bodyEnvironment(_ fields: inout FieldValidator) -> StoreEnvironment {
        fields.enumeration("environment", [StoreEnvironment.production.rawValue, StoreEnvironment.sandbox.rawValue])
            .map(StoreEnvironment.init(rawValue:)) ?? .sandbox
    }
}
