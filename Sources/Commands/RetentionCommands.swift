import API
import Domain
import Foundation
import Storage

/// `bouncer retention …`: Apple's side of Retention Messaging for a project (messages, the default message, the
/// Realtime URL, the performance test), through the admin API's use case (`RetentionMessageAdministration`), so the
/// rules, the JSON printed and the audit entries are the API's (actor `operator`, label `cli`).
public enum RetentionCommands {
    static let usage = """
        usage: bouncer retention messages list PROJECT_ID [--environment E]
               bouncer retention messages upload PROJECT_ID --header TEXT --body TEXT [--message-id UUID]
                                                 [--image-id UUID --alt-text TEXT] [--environment E]
               bouncer retention messages delete PROJECT_ID MESSAGE_ID [--environment E]
               bouncer retention images list PROJECT_ID [--environment E]
               bouncer retention images upload PROJECT_ID FILE.png [--image-id UUID] [--environment E]
               bouncer retention images delete PROJECT_ID IMAGE_ID [--environment E]
               bouncer retention default-message set PROJECT_ID PRODUCT_ID LOCALE MESSAGE_ID [--environment E]
               bouncer retention default-message delete PROJECT_ID PRODUCT_ID LOCALE [--environment E]
               bouncer retention realtime-url set PROJECT_ID URL [--environment E]
               bouncer retention performance-test PROJECT_ID ORIGINAL_TRANSACTION_ID

        Calls Apple's Retention Messaging API with the project's App Store credentials, as the admin routes
        /v1/admin/projects/{id}/retention/... do. E is Production or Sandbox (default Sandbox; the performance test
        runs in Sandbox only). upload without --message-id (--image-id) uses a new UUID; an image is a PNG file of at
        most 1 MiB. Header: at most 66 characters, body 144,
        alt text 150; the URL must be https.
        Prints JSON as the admin API does. Exit status: 0 done, 1 failed (Apple refused or unavailable, unknown
        project, database), 2 invalid arguments (Apple not asked).
        Uses DATABASE_URL (or the embedded PostgreSQL), BOUNCER_ENCRYPTION_KEY and BOUNCER_APPLE_API_* like
        `bouncer serve`.

        """

    public static let command = Command(name: "retention",
                                        summary: "Retention Messaging at Apple: messages, default message, Realtime URL, performance test",
                                        usage: usage) { args in run(args) }

    typealias UsageError = AdminCommands.UsageError

    /// The use case and the meter its calls to Apple count in (stored when the work ends, as `reconcile` does).
    struct Administration {
        let retention: RetentionMessageAdministration
        let usage: UsageMeter
    }

    static func run(_ args: [String]) -> Int32 {
        AdminCommands.run(args, usage: usage, { args throws(UsageError) in try parse(args) },
                          administration: { settings, database in
            let usage = UsageMeter(store: PostgresUsageStore(pool: database.pool))
            return Administration(retention: RetentionMessageAdministration(
                projects: PostgresProjectStore(pool: database.pool),
                credentials: CredentialCommands.administration(settings, database),
                api: appStoreClient(settings).map { MeteredAppleServerAPI($0, meter: usage, now: { Date() }) },
                store: PostgresRetentionStore(pool: database.pool)), usage: usage)
        })
    }

    private typealias Work = (Administration) throws -> [[UInt8]]

    private static func parse(_ args: [String]) throws(UsageError) -> Work {
        var positional: [String] = []
        var options: [String: String] = [:]
        var rest = ArraySlice(args)
        while let arg = rest.popFirst() {
            guard arg.hasPrefix("--") else { positional.append(arg); continue }
            guard ["--environment", "--header", "--body", "--message-id", "--image-id", "--alt-text"].contains(arg),
                  let value = rest.popFirst() else {
                throw UsageError(message: "unknown option or missing value: \(arg)")
            }
            options[arg] = value
        }
        let environment = try environmentOption(options["--environment"])
        func uuid(_ text: String?, _ name: String) throws(UsageError) -> UUID {
            guard let text, let id = UUID(uuidString: text) else { throw UsageError(message: "\(name) must be a UUID") }
            return id
        }
        let command = positional.prefix(2).joined(separator: " ")
        let arguments = Array(positional.dropFirst(command.hasPrefix("performance-test") ? 1 : 2))
        guard let first = arguments.first else { throw UsageError(message: "expected a PROJECT_ID") }
        let projectId = try uuid(first, "PROJECT_ID")
        let id = projectId.lowercasedText
        let base = "/v1/admin/projects/:id/retention/"
        func expect(_ count: Int) throws(UsageError) {
            guard arguments.count == count else { throw UsageError(message: "\(command): wrong number of arguments") }
        }
        switch command {
        case "messages list":
            try expect(1)
            return metered { [Representations.retentionMessages(try $0.messages(projectId: projectId, environment: environment))] }
        case "messages upload":
            try expect(1)
            guard let header = options["--header"], let body = options["--body"] else {
                throw UsageError(message: "upload needs --header and --body")
            }
            guard (options["--image-id"] == nil) == (options["--alt-text"] == nil) else {
                throw UsageError(message: "--image-id and --alt-text go together")
            }
            let messageId = try options["--message-id"].map { (text) throws(UsageError) in try uuid(text, "--message-id") } ?? UUID()
            var image: (id: UUID, altText: String)?
            if let altText = options["--alt-text"] { image = (try uuid(options["--image-id"], "--image-id"), altText) }
            let upload = RetentionMessageUpload(messageId: messageId, header: header, body: body, image: image)
            return recorded("PUT", base + "messages/:messageId", ["id": id, "messageId": messageId.lowercasedText],
                            projectId) {
                try $0.uploadMessage(projectId: projectId, upload, environment: environment)
                return [Representations.retentionMessage(upload, environment: environment)]
            }
        case "messages delete":
            try expect(2)
            let messageId = try uuid(arguments[1], "MESSAGE_ID")
            return recorded("DELETE", base + "messages/:messageId", ["id": id, "messageId": messageId.lowercasedText],
                            projectId) {
                try $0.deleteMessage(projectId: projectId, messageId: messageId, environment: environment)
                return []
            }
        case "images list":
            try expect(1)
            return metered { [Representations.retentionImages(try $0.images(projectId: projectId, environment: environment))] }
        case "images upload":
            try expect(2)
            let imageId = try options["--image-id"].map { (text) throws(UsageError) in try uuid(text, "--image-id") } ?? UUID()
            let png = try imageFile(arguments[1])
            return recorded("PUT", base + "images/:imageId", ["id": id, "imageId": imageId.lowercasedText],
                            projectId) {
                try $0.uploadImage(projectId: projectId, imageId: imageId, png: png, environment: environment)
                return [Representations.retentionImage(imageId, environment: environment, bytes: png.count)]
            }
        case "images delete":
            try expect(2)
            let imageId = try uuid(arguments[1], "IMAGE_ID")
            return recorded("DELETE", base + "images/:imageId", ["id": id, "imageId": imageId.lowercasedText],
                            projectId) {
                try $0.deleteImage(projectId: projectId, imageId: imageId, environment: environment)
                return []
            }
        case "default-message delete":
            try expect(3)
            let (productId, locale) = (arguments[1], arguments[2])
            return recorded("DELETE", base + "default-messages/:productId/:locale",
                            ["id": id, "productId": productId, "locale": locale], projectId) {
                try $0.deleteDefaultMessage(projectId: projectId, productId: productId, locale: locale,
                                            environment: environment)
                return []
            }
        case "default-message set":
            try expect(4)
            let (productId, locale) = (arguments[1], arguments[2])
            let messageId = try uuid(arguments[3], "MESSAGE_ID")
            return recorded("PUT", base + "default-messages/:productId/:locale",
                            ["id": id, "productId": productId, "locale": locale], projectId) {
                try $0.setDefaultMessage(projectId: projectId, productId: productId, locale: locale, messageId: messageId,
                                         environment: environment)
                return [Representations.retentionDefaultMessage(productId: productId, locale: locale,
                                                                messageId: messageId, environment: environment)]
            }
        case "realtime-url set":
            try expect(2)
            let url = arguments[1]
            return recorded("PUT", base + "realtime-url", ["id": id], projectId) {
                try $0.setRealtimeURL(projectId: projectId, url: url, environment: environment)
                return [Representations.retentionRealtimeURL(url, environment: environment)]
            }
        default:
            guard positional.first == "performance-test" else { throw UsageError(message: "unknown subcommand") }
            try expect(2)
            guard options["--environment"] == nil || environment == .sandbox else {
                throw UsageError(message: "Apple runs the performance test in Sandbox only")
            }
            let otid = arguments[1]
            return recorded("POST", base + "performance-test", ["id": id], projectId) {
                [Representations.retentionPerformanceTest(try $0.startPerformanceTest(projectId: projectId,
                                                                                      originalTransactionId: otid))]
            }
        }
    }

    /// `work` with the calls to Apple it made stored in the usage counts afterwards.
    private static func metered(_ work: @escaping (RetentionMessageAdministration) throws -> [[UInt8]]) -> Work {
        { administration in
            defer {
                do { try administration.usage.flush(now: Date()) } catch { CLI.err("bouncer: usage: \(error)\n") }
            }
            return try work(administration.retention)
        }
    }

    /// `work`, metered, recorded as the change of the admin route `method pattern`.
    private static func recorded(_ method: String, _ pattern: String, _ parameters: [String: String], _ projectId: UUID,
                                 _ work: @escaping (RetentionMessageAdministration) throws -> [[UInt8]]) -> Work {
        CLIAudit.recorded(method, pattern, parameters: parameters, projectId: projectId, metered(work))
    }

    /// The App Store client, or nil (reported) when its configuration does not load: the use case then answers
    /// "Apple unavailable".
    private static func appStoreClient(_ settings: ServeSettings) -> (any AppleServerAPI)? {
        do {
            return try ServeCommand.makeAppStoreClient(settings.appleAPI)
        } catch {
            CLI.err("bouncer: App Store Server API client: \(error)\n")
            return nil
        }
    }

    /// The bytes of a PNG file for `images upload`: at most the API's limit (the use case checks the signature).
    private static func imageFile(_ path: String) throws(UsageError) -> [UInt8] {
        let limit = RetentionMessageAdministration.maxImageBytes
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let size = attributes[.size] as? Int else { throw UsageError(message: "cannot read \(path)") }
        guard size <= limit else { throw UsageError(message: "\(path): an image is at most \(limit) bytes") }
        guard let data = FileManager.default.contents(atPath: path) else { throw UsageError(message: "cannot read \(path)") }
        return Array(data)
    }

    private static func environmentOption(_ text: String?) throws(UsageError) -> StoreEnvironment {
        switch text {
        case nil, "Sandbox": return .sandbox
        case "Production": return .production
        default: throw UsageError(message: "--environment must be Production or Sandbox")
        }
    }
}
