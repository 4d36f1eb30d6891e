public import Domain
public import Foundation
import JSON

/// Apple's Retention Messaging API on the App Store client: the same hosts, JWT, time budget, retries and error
/// mapping as the App Store Server API (`call`).
extension AppStoreServerClient: RetentionMessagingAPI {
    public func uploadMessage(_ message: RetentionMessageUpload, environment: StoreEnvironment,
                              credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        var members: [(String, JSONValue)] = [("header", .string(message.header)), ("body", .string(message.body))]
        if let image = message.image {
            members.append(("image", .object(JSONObject([
                ("imageIdentifier", .string(image.id.lowercasedText)), ("altText", .string(image.altText)),
            ]))))
        }
        _ = try call("PUT", "/inApps/v1/messaging/message/\(message.messageId.lowercasedText)", environment,
                     credentials, body: JSONValue.object(JSONObject(members)).serialized())
    }

    public func uploadImage(_ imageId: UUID, png: [UInt8], environment: StoreEnvironment,
                            credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        _ = try call("PUT", "/inApps/v1/messaging/image/\(imageId.lowercasedText)", environment, credentials,
                     body: png, contentType: "image/png")
    }

    /// `{KINDIdentifiers: [{KINDIdentifier, KINDState}]}`.
    public func assets(_ kind: RetentionAssetKind, environment: StoreEnvironment,
                       credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> [RetentionAssetState] {
        let kind = kind.rawValue
        let body = try call("GET", "/inApps/v1/messaging/\(kind)/list", environment, credentials)
        return try Self.assets(body, list: "\(kind)Identifiers", id: "\(kind)Identifier", state: "\(kind)State",
                               limit: configuration.maxResponseBytes)
    }

    public func deleteAsset(_ kind: RetentionAssetKind, _ id: UUID, environment: StoreEnvironment,
                            credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        _ = try call("DELETE", "/inApps/v1/messaging/\(kind.rawValue)/\(id.lowercasedText)", environment,
                     credentials)
    }

    public func configureDefaultMessage(productId: String, locale: String, messageId: UUID,
                                        environment: StoreEnvironment,
                                        credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        let body: JSONValue = ["messageIdentifier": .string(messageId.lowercasedText)]
        _ = try call("PUT", Self.defaultMessagePath(productId, locale), environment, credentials, body: body.serialized())
    }

    public func deleteDefaultMessage(productId: String, locale: String, environment: StoreEnvironment,
                                     credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        _ = try call("DELETE", Self.defaultMessagePath(productId, locale), environment, credentials)
    }

    public func configureRealtimeURL(_ url: String, environment: StoreEnvironment,
                                     credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        let body: JSONValue = ["realtimeUrl": .string(url)]
        _ = try call("PUT", "/inApps/v1/messaging/realtime/url", environment, credentials, body: body.serialized())
    }

    public func initiatePerformanceTest(originalTransactionId: String, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> PerformanceTestStarted
    {
        // Sandbox only, as Apple documents; a POST that starts a test: never retried.
        let request: JSONValue = ["originalTransactionId": .string(originalTransactionId)]
        let body = try call("POST", "/inApps/v1/messaging/performanceTest", .sandbox, credentials,
                            body: request.serialized(), idempotent: false)
        let object = try Self.object(body, limit: configuration.maxResponseBytes)
        guard let config = object["config"]?.objectValue else { throw Self.invalid("config is missing") }
        func int(_ key: String) throws(AppStoreAPIError) -> Int64 {
            guard let value = config[key]?.int64Value else { throw Self.invalid("config.\(key) is missing") }
            return value
        }
        return PerformanceTestStarted(
            requestId: try Self.string(object, "requestId"), maxConcurrentRequests: try int("maxConcurrentRequests"),
            totalRequests: try int("totalRequests"), totalDuration: try int("totalDuration"),
            responseTimeThreshold: try int("responseTimeThreshold"), successRateThreshold: try int("successRateThreshold"))
    }

    static func defaultMessagePath(_ productId: String, _ locale: String) -> String {
        "/inApps/v1/messaging/default/\(pathSegment(productId))/\(pathSegment(locale))"
    }

    /// `{LIST: [{ID: uuid, STATE: text}]}`; an absent list is empty.
    static func assets(_ body: [UInt8], list: String, id: String, state: String, limit: Int) throws(AppStoreAPIError)
        -> [RetentionAssetState]
    {
        let object = try Self.object(body, limit: limit)
        var out: [RetentionAssetState] = []
        for item in try array(object, list, optional: true) {
            guard let item = item.objectValue else { throw invalid("\(list)[] is not an object") }
            guard let uuid = UUID(uuidString: try string(item, id)) else { throw invalid("\(list)[].\(id) is not a UUID") }
            out.append(RetentionAssetState(id: uuid, state: try string(item, state)))
        }
        return out
    }
}
