public import Foundation

/// Apple's Retention Messaging API (messages, images, default messages, the Realtime URL, the performance test),
/// implemented by the App Store client (`AppStoreServerClient`, same JWT, hosts, budget and retries as the App Store
/// Server API). Nothing here is signed data: the answers are Apple's state, not facts about purchases.
public protocol RetentionMessagingAPI: Sendable {
    /// `PUT /inApps/v1/messaging/message/{messageIdentifier}` (Upload Message).
    func uploadMessage(_ message: RetentionMessageUpload, environment: StoreEnvironment,
                       credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
    /// `GET /inApps/v1/messaging/{message|image}/list` (Get Message List, Get Image List): every asset of the kind and
    /// its review state.
    func assets(_ kind: RetentionAssetKind, environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> [RetentionAssetState]
    /// `DELETE /inApps/v1/messaging/{message|image}/{identifier}` (Delete Message, Delete Image).
    func deleteAsset(_ kind: RetentionAssetKind, _ id: UUID, environment: StoreEnvironment,
                     credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
    /// `PUT /inApps/v1/messaging/image/{imageIdentifier}` with the PNG (Upload Image).
    func uploadImage(_ imageId: UUID, png: [UInt8], environment: StoreEnvironment,
                     credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
    /// `PUT /inApps/v1/messaging/default/{productId}/{locale}` with `{"messageIdentifier"}` (Configure Default
    /// Message).
    func configureDefaultMessage(productId: String, locale: String, messageId: UUID, environment: StoreEnvironment,
                                 credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
    /// `DELETE /inApps/v1/messaging/default/{productId}/{locale}` (Delete Default Message).
    func deleteDefaultMessage(productId: String, locale: String, environment: StoreEnvironment,
                              credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
    /// `PUT /inApps/v1/messaging/realtime/url` with `{"realtimeUrl"}` (Configure Realtime URL).
    func configureRealtimeURL(_ url: String, environment: StoreEnvironment,
                              credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
    /// `POST /inApps/v1/messaging/performanceTest` with `{"originalTransactionId"}` (Initiate Performance Test,
    /// Sandbox only): the test's id and configuration.
    func initiatePerformanceTest(originalTransactionId: String, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> PerformanceTestStarted
}

/// What the Retention Messaging API stores and reviews: messages and images (the path segment of their routes and the
/// stem of their list's keys, `messageIdentifiers` / `imageIdentifier` / `imageState`).
public enum RetentionAssetKind: String, Sendable {
    /// A text message (`message`).
    case message
    /// A PNG image (`image`).
    case image
}

extension RetentionMessagingAPI {
    /// Get Message List: every message and its review state.
    public func messages(environment: StoreEnvironment, credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
        -> [RetentionAssetState] { try assets(.message, environment: environment, credentials: credentials) }

    /// Get Image List.
    public func images(environment: StoreEnvironment, credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
        -> [RetentionAssetState] { try assets(.image, environment: environment, credentials: credentials) }

    /// Delete Message.
    public func deleteMessage(_ messageId: UUID, environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) { try deleteAsset(.message, messageId, environment: environment, credentials: credentials) }

    /// Delete Image.
    public func deleteImage(_ imageId: UUID, environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) { try deleteAsset(.image, imageId, environment: environment, credentials: credentials) }
}

/// A text message to upload: `header` and `body` (Apple bounds their lengths), optionally with an uploaded image.
public struct RetentionMessageUpload: Sendable, Equatable {
    public var messageId: UUID
    public var header: String
    public var body: String
    /// The image's id and its alternative text.
    public var image: (id: UUID, altText: String)?

    /// Creates a value.
    public init(messageId: UUID, header: String, body: String, image: (id: UUID, altText: String)? = nil) {
        self.messageId = messageId
        self.header = header
        self.body = body
        self.image = image
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.messageId == b.messageId && a.header == b.header && a.body == b.body
            && a.image?.id == b.image?.id && a.image?.altText == b.image?.altText
    }
}

/// A message or image Apple holds and its review state (`PENDING`, `APPROVED`, `REJECTED`; raw, so new states pass).
public struct RetentionAssetState: Sendable, Equatable {
    public var id: UUID
    public var state: String

    /// Creates a value.
    public init(id: UUID, state: String) {
        self.id = id
        self.state = state
    }
}

/// Apple's answer to Initiate Performance Test: `requestId` and the `PerformanceTestConfig` it will use.
public struct PerformanceTestStarted: Sendable, Equatable {
    public var requestId: String
    public var maxConcurrentRequests: Int64
    public var totalRequests: Int64
    public var totalDuration: Int64
    public var responseTimeThreshold: Int64
    public var successRateThreshold: Int64

    /// Creates a value.
    public init(requestId: String, maxConcurrentRequests: Int64, totalRequests: Int64, totalDuration: Int64,
                responseTimeThreshold: Int64, successRateThreshold: Int64) {
        self.requestId = requestId
        self.maxConcurrentRequests = maxConcurrentRequests
        self.totalRequests = totalRequests
        self.totalDuration = totalDuration
        self.responseTimeThreshold = responseTimeThreshold
        self.successRateThreshold = successRateThreshold
    }
}
