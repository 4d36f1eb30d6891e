import API
import Domain
import Foundation
import JSON
import Storage

/// `bouncer project …` and `bouncer product …`: admin provisioning straight against the database (same rules and
/// output as the admin API, no server needed).
enum AdminCommands {
    static let projectUsage = """
        usage: bouncer project create --name NAME --bundle-id ID [--app-apple-id N] [--environment ENV]...
                                      [--transfer-policy transfer|share|block] [--allow-xcode] [--require-secret-key]
               bouncer project list
               bouncer project show PROJECT_ID
               bouncer project rotate-keys PROJECT_ID

        Prints JSON as the admin API does. The secret key is shown only by create and rotate-keys.
        Uses DATABASE_URL, or else the embedded PostgreSQL under BOUNCER_DATA_DIR.

        """

    static let productUsage = """
        usage: bouncer product set PROJECT_ID PRODUCT_ID ENTITLEMENT...
               bouncer product list PROJECT_ID
               bouncer product delete PROJECT_ID PRODUCT_ID

        Maps an App Store product to the entitlements it grants while active.

        """

    static let projectCommand = Command(name: "project", summary: "Create, list, show projects; rotate keys",
                                        usage: projectUsage) { args in
        run(args, usage: projectUsage) { args throws(UsageError) in try project(args) }
    }

    static let productCommand = Command(name: "product", summary: "Map products to entitlements",
                                        usage: productUsage) { args in
        run(args, usage: productUsage) { args throws(UsageError) in try product(args) }
    }

    struct UsageError: Error { let message: String }

    /// Parses a subcommand's arguments into what it does once the database is open (JSON lines to print).
    private typealias Parse = ([String]) throws(UsageError) -> Work
    private typealias Work = (PostgresProjectStore) throws -> [[UInt8]]

    private static func run(_ args: [String], usage: String, _ parse: Parse) -> Int32 {
        if args.first == "--help" || args.first == "-h" || args.isEmpty {
            if args.isEmpty { CLI.err(usage); return 2 }
            CLI.out(usage)
            return 0
        }
        let work: Work
        do {
            work = try parse(args)
        } catch {
            CLI.err("bouncer: \(error.message)\n\n" + usage)
            return 2
        }
        let settings: ServeSettings
        switch ServeSettings.fromEnvironment(ProcessInfo.processInfo.environment) {
        case .failure(let problems):
            CLI.err("bouncer: invalid configuration:\n" + problems.messages.map { "  " + $0 + "\n" }.joined())
            return 2
        case .success(let s): settings = s
        }
        let log: @Sendable (String) -> Void = { CLI.err($0 + "\n") }
        let database: Database
        do {
            database = try Database.open(settings.database, log: log)
        } catch {
            CLI.err("bouncer: database: \(error)\n")
            return 1
        }
        defer { database.close(log: log) }
        let store = PostgresProjectStore(pool: database.pool)
        do {
            for line in try work(store) {
                let pretty = (try? JSONParser.parse(line).serializedString(pretty: true)) ?? String(decoding: line, as: UTF8.self)
                CLI.out(pretty + "\n")
            }
            return 0
        } catch {
            CLI.err("bouncer: \(error)\n")
            return 1
        }
    }

    private static func project(_ args: [String]) throws(UsageError) -> Work {
        let hasher = SHA256SecretHasher()
        switch args.first {
        case "create":
            var new = NewProject(name: "", bundleId: "")
            var environments: [StoreEnvironment] = []
            var rest = ArraySlice(args.dropFirst())
            func value(_ flag: String) throws(UsageError) -> String {
                guard let v = rest.popFirst(), !v.isEmpty else { throw UsageError(message: "\(flag) needs a value") }
                return v
            }
            while let flag = rest.popFirst() {
                switch flag {
                case "--name": new.name = try value(flag)
                case "--bundle-id": new.bundleId = try value(flag)
                case "--app-apple-id":
                    guard let n = Int64(try value(flag)), n > 0 else { throw UsageError(message: "--app-apple-id must be a positive integer") }
                    new.appAppleId = n
                case "--environment":
                    let env = StoreEnvironment(rawValue: try value(flag))
                    guard env == .production || env == .sandbox else {
                        throw UsageError(message: "--environment must be Production or Sandbox (use --allow-xcode for Xcode)")
                    }
                    environments.append(env)
                case "--transfer-policy":
                    guard let p = TransferPolicy(rawValue: try value(flag)) else {
                        throw UsageError(message: "--transfer-policy must be transfer, share or block")
                    }
                    new.transferPolicy = p
                case "--allow-xcode": new.allowXcode = true
                case "--require-secret-key": new.requireSecretKeyForReads = true
                default: throw UsageError(message: "unknown option \(flag)")
                }
            }
            guard !new.name.isEmpty, !new.bundleId.isEmpty else { throw UsageError(message: "--name and --bundle-id are required") }
            // The admin API's limits (POST /v1/admin/projects): name up to 200 scalars, bundle id up to 255.
            guard new.name.unicodeScalars.count <= 200, new.bundleId.unicodeScalars.count <= 255 else {
                throw UsageError(message: "--name must be at most 200 characters and --bundle-id at most 255")
            }
            if !environments.isEmpty { new.environments = environments }
            let project = new
            return { store in
                let keys = ProjectKeys.generate()
                let created = try store.createProject(
                    project, publicKey: keys.publicKey, secretKeyHash: hasher.hash(keys.secretKey), now: Date())
                return [Representations.project(created, secretKey: keys.secretKey)]
            }
        case "list":
            guard args.count == 1 else { throw UsageError(message: "list takes no arguments") }
            return { store in [wrap("projects", try store.allProjects().map { Representations.project($0) })] }
        case "show":
            let id = try projectId(args)
            return { store in
                guard let p = try store.project(id: id) else { throw DomainError(.projectNotFound, "no project \(id)") }
                return [Representations.project(p)]
            }
        case "rotate-keys":
            let id = try projectId(args)
            return { store in
                let keys = ProjectKeys.generate()
                guard let p = try store.rotateKeys(
                    id: id, publicKey: keys.publicKey, secretKeyHash: hasher.hash(keys.secretKey), now: Date())
                else { throw DomainError(.projectNotFound, "no project \(id)") }
                return [Representations.project(p, secretKey: keys.secretKey)]
            }
        default:
            throw UsageError(message: "unknown project command '\(args.first ?? "")'")
        }
    }

    private static func product(_ args: [String]) throws(UsageError) -> Work {
        switch args.first {
        case "set":
            guard args.count >= 4 else { throw UsageError(message: "set needs PROJECT_ID PRODUCT_ID ENTITLEMENT...") }
            let id = try projectId(args)
            // The admin API's limits (PUT …/products/:productId): product id 1–256, each entitlement 1–128 scalars.
            guard (1...256).contains(args[2].unicodeScalars.count) else {
                throw UsageError(message: "PRODUCT_ID must be 1 to 256 characters")
            }
            guard args.dropFirst(3).allSatisfy({ (1...128).contains($0.unicodeScalars.count) }) else {
                throw UsageError(message: "each ENTITLEMENT must be 1 to 128 characters")
            }
            let mapping = ProductMapping(productId: args[2], entitlements: Array(args.dropFirst(3)))
            return { store in
                guard try store.project(id: id) != nil else { throw DomainError(.projectNotFound, "no project \(id)") }
                return [Representations.product(try store.setProduct(projectId: id, mapping, now: Date()))]
            }
        case "list":
            guard args.count == 2 else { throw UsageError(message: "list needs PROJECT_ID") }
            let id = try projectId(args)
            return { store in [wrap("products", try store.products(projectId: id).map(Representations.product))] }
        case "delete":
            guard args.count == 3 else { throw UsageError(message: "delete needs PROJECT_ID PRODUCT_ID") }
            let id = try projectId(args)
            let productId = args[2]
            return { store in
                guard try store.deleteProduct(projectId: id, productId: productId) else {
                    throw DomainError(.productNotFound, "no product \(productId) in project \(id)")
                }
                return []
            }
        default:
            throw UsageError(message: "unknown product command '\(args.first ?? "")'")
        }
    }

    /// `{"<key>": [items…]}`, the admin API's list shape, so scripts parse one document.
    private static func wrap(_ key: String, _ items: [[UInt8]]) -> [UInt8] {
        var out = Array("{\"\(key)\":[".utf8)
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: item)
        }
        out.append(contentsOf: Array("]}".utf8))
        return out
    }

    private static func projectId(_ args: [String]) throws(UsageError) -> UUID {
        guard args.count >= 2, let id = UUID(uuidString: args[1]) else {
            throw UsageError(message: "PROJECT_ID must be a UUID")
        }
        return id
    }
}
