public import Domain
public import Foundation

/// The JSON shapes of admin resources, for other front ends (the `bouncer project|product` CLI) to print exactly
/// what the admin API returns.
public enum Representations {
    /// A project as `GET /v1/admin/projects/:id` returns it; with a new secret key, as creation and rotation do.
    public static func project(_ project: AdministeredProject) -> [UInt8] {
        ProjectsController.projectBody(project)
    }

    /// Projects as `GET /v1/admin/projects` lists them.
    public static func projects(_ projects: [AdministeredProject]) -> [UInt8] {
        ProjectsController.projectsBody(projects)
    }

    /// Product mappings as `GET /v1/admin/projects/:id/products` lists them.
    public static func products(_ products: [ProductMapping]) -> [UInt8] {
        ProductsController.productsBody(products)
    }

    /// A product mapping as `PUT /v1/admin/projects/:id/products/:productId` returns it.
    public static func product(_ product: ProductMapping) -> [UInt8] {
        JSONBody.bytes(capacity: 128) { ProductsController.writeProduct(product, into: &$0) }
    }

    /// App Store credentials as `GET /v1/admin/projects/:id/app-store-credentials` returns them (never the key).
    public static func appStoreCredentials(_ credentials: AppStoreCredentials) -> [UInt8] {
        AppStoreCredentialsController.credentialsBody(credentials)
    }

    /// Apple's retention messages as `GET /v1/admin/projects/:id/retention/messages` lists them.
    public static func retentionMessages(_ messages: [RetentionAssetState]) -> [UInt8] {
        RetentionMessagesController.assetsBody("messages", "message_id", messages)
    }

    /// Apple's retention images as `GET /v1/admin/projects/:id/retention/images` lists them.
    public static func retentionImages(_ images: [RetentionAssetState]) -> [UInt8] {
        RetentionMessagesController.assetsBody("images", "image_id", images)
    }

    /// An uploaded retention image as `PUT …/retention/images/:imageId` returns it.
    public static func retentionImage(_ imageId: UUID, environment: StoreEnvironment, bytes: Int) -> [UInt8] {
        RetentionMessagesController.imageBody(imageId, environment, bytes: bytes)
    }

    /// An uploaded retention message as `PUT …/retention/messages/:messageId` returns it.
    public static func retentionMessage(_ upload: RetentionMessageUpload, environment: StoreEnvironment) -> [UInt8] {
        RetentionMessagesController.messageBody(upload, environment)
    }

    /// A default message as `PUT …/retention/default-messages/:productId/:locale` returns it.
    public static func retentionDefaultMessage(productId: String, locale: String, messageId: UUID,
                                               environment: StoreEnvironment) -> [UInt8] {
        RetentionMessagesController.defaultMessageBody(productId, locale, messageId, environment)
    }

    /// A Realtime URL as `PUT …/retention/realtime-url` returns it.
    public static func retentionRealtimeURL(_ url: String, environment: StoreEnvironment) -> [UInt8] {
        RetentionMessagesController.realtimeURLBody(url, environment)
    }

    /// A started performance test as `POST …/retention/performance-test` returns it.
    public static func retentionPerformanceTest(_ started: PerformanceTestStarted) -> [UInt8] {
        RetentionMessagesController.performanceTestBody(started)
    }
}
