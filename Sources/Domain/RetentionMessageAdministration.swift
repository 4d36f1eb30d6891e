public import Foundation

/// Apple's side of Retention Messaging, on a project's behalf: messages and images (upload, list with their review
/// state, delete), the default message per product and locale, the Realtime URL and the performance test, each
/// through the App Store client with the project's credentials. Apple holds the state; Bouncer keeps only the audit
/// entry of each change Apple accepted (in its own transaction, as for test notifications).
///
/// Throws `DomainError` (`.invalidInput`, `.projectNotFound`, `.appStoreCredentialsMissing`, the retention codes
/// below, the stores') and `AppStoreAPIError` (Apple unreachable, refusing the key, answering nonsense).
public struct RetentionMessageAdministration: Sendable {
    private let projects: any ProjectStore
    private let credentials: CredentialAdministration
    private let api: (any RetentionMessagingAPI)?
    private let store: any RetentionStore

    /// The use cases; without `api` every call answers "Apple unavailable" (503), never a verdict.
    public init(projects: any ProjectStore, credentials: CredentialAdministration, api: (any RetentionMessagingAPI)?,
                store: any RetentionStore) {
        self.projects = projects
        self.credentials = credentials
        self.api = api
        self.store = store
    }

    /// Apple's bounds (Upload Message: HeaderTooLongError, BodyTooLongError, AltTextTooLongError), in characters.
    public static let headerLength = 1...66
    /// See `headerLength`.
    public static let bodyLength = 1...144
    /// See `headerLength`.
    public static let altTextLength = 1...150
    /// The largest PNG Bouncer passes on (the route's body limit).
    public static let maxImageBytes = 1024 * 1024
    /// A Realtime URL's length bound.
    public static let maxURLLength = 2048

    /// Upload Message: a text message, optionally with an uploaded image and its alternative text.
    public func uploadMessage(projectId: UUID, _ message: RetentionMessageUpload, environment: StoreEnvironment)
        throws {
        var changes = [AuditChange("header", .null, .string(message.header)),
                       AuditChange("body", .null, .string(message.body))]
        if let image = message.image {
            changes.append(AuditChange("image_id", .null, .string(image.id.lowercasedText)))
            changes.append(AuditChange("alt_text", .null, .string(image.altText)))
        }
        try callApple(projectId, environment, notFound: .retentionImageNotFound, audit: { _ in changes }) {
            (api, signing) throws(AppStoreAPIError) in
            try api.uploadMessage(message, environment: environment, credentials: signing)
        }
    }

    /// Get Message List: every message and its review state.
    public func messages(projectId: UUID, environment: StoreEnvironment) throws -> [RetentionAssetState] {
        try callApple(projectId, environment, notFound: .retentionMessageNotFound, audit: nil) {
            (api, signing) throws(AppStoreAPIError) in
            try api.messages(environment: environment, credentials: signing)
        }
    }

    /// Delete Message.
    public func deleteMessage(projectId: UUID, messageId: UUID, environment: StoreEnvironment) throws {
        try callApple(projectId, environment, notFound: .retentionMessageNotFound, audit: { _ in [] }) {
            (api, signing) throws(AppStoreAPIError) in
            try api.deleteMessage(messageId, environment: environment, credentials: signing)
        }
    }

    /// Upload Image: a PNG (its signature checked here, its size bounded).
    public func uploadImage(projectId: UUID, imageId: UUID, png: [UInt8], environment: StoreEnvironment) throws {
        guard png.starts(with: Self.pngSignature), png.count <= Self.maxImageBytes else {
            throw DomainError(.invalidInput, "Invalid image.", details: [
                FieldProblem(path: ["body"], message: "Must be a PNG image of at most \(Self.maxImageBytes) bytes"),
            ])
        }
        try callApple(projectId, environment, notFound: .retentionImageNotFound,
                   audit: { _ in [AuditChange("bytes", .null, .int(png.count))] }) {
            (api, signing) throws(AppStoreAPIError) in
            try api.uploadImage(imageId, png: png, environment: environment, credentials: signing)
        }
    }

    /// Get Image List.
    public func images(projectId: UUID, environment: StoreEnvironment) throws -> [RetentionAssetState] {
        try callApple(projectId, environment, notFound: .retentionImageNotFound, audit: nil) {
            (api, signing) throws(AppStoreAPIError) in
            try api.images(environment: environment, credentials: signing)
        }
    }

    /// Delete Image.
    public func deleteImage(projectId: UUID, imageId: UUID, environment: StoreEnvironment) throws {
        try callApple(projectId, environment, notFound: .retentionImageNotFound, audit: { _ in [] }) {
            (api, signing) throws(AppStoreAPIError) in
            try api.deleteImage(imageId, environment: environment, credentials: signing)
        }
    }

    /// Configure Default Message: what the App Store shows for `productId` in `locale` when Bouncer has no answer.
    public func setDefaultMessage(projectId: UUID, productId: String, locale: String, messageId: UUID,
                                  environment: StoreEnvironment) throws {
        try Self.checkDefaultKey(productId: productId, locale: locale)
        try callApple(projectId, environment, notFound: .retentionMessageNotFound, audit: { _ in [
            AuditChange("locale", .null, .string(locale)),
            AuditChange("message_id", .null, .string(messageId.lowercasedText)),
        ] }) {
            (api, signing) throws(AppStoreAPIError) in
            try api.configureDefaultMessage(productId: productId, locale: locale, messageId: messageId,
                                            environment: environment, credentials: signing)
        }
    }

    /// Delete Default Message.
    public func deleteDefaultMessage(projectId: UUID, productId: String, locale: String,
                                     environment: StoreEnvironment) throws {
        try Self.checkDefaultKey(productId: productId, locale: locale)
        try callApple(projectId, environment, notFound: .retentionDefaultMessageNotFound,
                   audit: { _ in [AuditChange("locale", .null, .string(locale))] }) {
            (api, signing) throws(AppStoreAPIError) in
            try api.deleteDefaultMessage(productId: productId, locale: locale, environment: environment,
                                         credentials: signing)
        }
    }

    /// Configure Realtime URL: where the App Store asks for a message (an `https` URL; Bouncer's is
    /// `https://HOST/v1/retention/<public key>`).
    public func setRealtimeURL(projectId: UUID, url: String, environment: StoreEnvironment) throws {
        let problems = Self.urlProblems(url)
        guard problems.isEmpty else { throw DomainError(.invalidInput, "Invalid Realtime URL.", details: problems) }
        try callApple(projectId, environment, notFound: .retentionMessageNotFound,
                   audit: { _ in [AuditChange("url", .null, .string(url))] }) {
            (api, signing) throws(AppStoreAPIError) in
            try api.configureRealtimeURL(url, environment: environment, credentials: signing)
        }
    }

    /// Initiate Performance Test (Sandbox only, as Apple documents): Apple's test id and configuration.
    public func startPerformanceTest(projectId: UUID, originalTransactionId: String) throws -> PerformanceTestStarted {
        let problems = TransactionLookup.problems(transactionId: originalTransactionId, path: ["original_transaction_id"])
        guard problems.isEmpty else { throw DomainError(.invalidInput, "Invalid performance test.", details: problems) }
        return try callApple(projectId, .sandbox, notFound: .retentionMessageNotFound, audit: { started in [
            AuditChange("original_transaction_id", .null, .string(originalTransactionId)),
            AuditChange("request_id", .null, .string(started.requestId)),
        ] }) {
            (api, signing) throws(AppStoreAPIError) in
            try api.initiatePerformanceTest(originalTransactionId: originalTransactionId, credentials: signing)
        }
    }

    /// The problems of a Realtime URL (empty: fine): `https`, a host, bounded.
    public static func urlProblems(_ url: String) -> [FieldProblem] {
        guard url.utf8.count <= maxURLLength, let parsed = URL(string: url), parsed.scheme?.lowercased() == "https",
              let host = parsed.host, !host.isEmpty
        else {
            return [FieldProblem(path: ["url"], message: "Must be an https URL of at most \(maxURLLength) characters")]
        }
        return []
    }

    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// A product id and a locale (`en-US`) that fit in a path segment.
    static func checkDefaultKey(productId: String, locale: String) throws {
        var problems: [FieldProblem] = []
        if !ProjectRules.productIdLength.contains(productId.utf8.count) {
            problems.append(FieldProblem(path: ["productId"], message: "Must be a product id"))
        }
        let allowed = { (b: UInt8) in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
        }
        if locale.isEmpty || locale.utf8.count > 35 || !locale.utf8.allSatisfy(allowed) {
            problems.append(FieldProblem(path: ["locale"], message: "Must be a locale such as en-US"))
        }
        guard problems.isEmpty else { throw DomainError(.invalidInput, "Invalid default message.", details: problems) }
    }

    /// One call to Apple for the project in `environment` (Production or Sandbox, with the project's credentials),
    /// Apple's refusals translated (`translated`), then, for a change (`audit` non-nil), the audit entry of what
    /// Apple accepted: the environment, then the fields `audit` makes of Apple's answer.
    private func callApple<T>(_ projectId: UUID, _ environment: StoreEnvironment, notFound: DomainError.Code,
                              audit: ((T) -> [AuditChange])?,
                              _ call: (any RetentionMessagingAPI, AppStoreAPICredentials) throws(AppStoreAPIError) -> T)
        throws -> T
    {
        let (signing, api) = try prepare(projectId, environment)
        let answer = try translated(notFound: notFound) { () throws(AppStoreAPIError) in try call(api, signing) }
        if let audit {
            try store.recordRetentionMessagingChange(
                projectId: projectId,
                changes: [AuditChange("environment", .null, .string(environment.rawValue))] + audit(answer))
        }
        return answer
    }

    private func prepare(_ projectId: UUID, _ environment: StoreEnvironment) throws
        -> (AppStoreAPICredentials, any RetentionMessagingAPI)
    {
        guard environment == .production || environment == .sandbox else {
            throw DomainError(.invalidInput, "Invalid environment.", details: [
                FieldProblem(path: ["environment"], message: "Invalid enum value. Expected 'Production' | 'Sandbox'"),
            ])
        }
        let project = try projects.existingProject(id: projectId)
        let signing = try credentials.appStoreAPICredentials(for: project)
        guard let api else {
            throw AppStoreAPIError(.unavailable, reason: "the Retention Messaging client is not configured",
                                   retryAfterSeconds: 60)
        }
        return (signing, api)
    }

    /// Apple's documented refusals (Retention Messaging API "Error codes") as our codes; Apple's other refusals
    /// (a message too long, not yet approved, a limit reached) as `RETENTION_REJECTED_BY_APPLE` with Apple's words.
    /// An outage, a refused key or an unreadable answer passes through (503/502).
    private func translated<T>(notFound: DomainError.Code, _ call: () throws(AppStoreAPIError) -> T) throws -> T {
        do {
            return try call()
        } catch {
            let code: DomainError.Code? = switch error.appleErrorCode {
            case 4090000: .retentionMessageExists
            case 4090001: .retentionImageExists
            case 4040001: .retentionMessageNotFound
            case 4040002: .retentionImageNotFound
            case 4040003: .retentionDefaultMessageNotFound
            default: error.kind == .notFound ? notFound : error.kind == .rejected ? .retentionRejectedByApple : nil
            }
            guard let code else { throw error }
            let words = [error.appleErrorMessage, error.appleErrorCode.map { "errorCode \($0)" }].compactMap { $0 }
            throw DomainError(code, "Apple: " + (words.isEmpty ? "refused the request" : words.joined(separator: ", ")),
                              underlying: error.description)
        }
    }
}
