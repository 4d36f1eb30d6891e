import Verification
import Jobs
import API
import Domain
import Foundation
import JSON
import Storage

/// `bouncer project …` and `bouncer product …`: admin provisioning straight against the database. Both call the
/// admin API's use cases (`ProjectAdministration`), so the rules and the JSON printed are the API's.
public enum AdminCommands {
    static let projectUsage = """
        usage: bouncer project create --name NAME --bundle-id ID [--account ACCOUNT_ID] [SETTINGS]
               bouncer project update PROJECT_ID [--name NAME] [--bundle-id ID] [SETTINGS]
               bouncer project list
               bouncer project show PROJECT_ID
               bouncer project delete PROJECT_ID
               bouncer project rotate-keys PROJECT_ID [--key public|secret] [--grace-seconds N]
               bouncer project credentials set|show|delete PROJECT_ID ...   (see `bouncer project credentials --help`)

        SETTINGS: [--app-apple-id N] [--environment Production|Sandbox]... [--transfer-policy transfer|share|block]
                  [--allow-xcode] [--require-secret-key] [--app-account-token-policy ignore|require_match|prefer]
                  [--consumption-response off|auto] [--consumption-customer-consented true|false]
                  [--consumption-sample-content-provided true|false]
                  [--consumption-refund-preference DECLINE|GRANT_FULL|GRANT_PRORATED|none]
                  [--app-purchased-before VERSION --app-purchase-entitlement NAME...] [--no-app-purchase-entitlements]
                  [--entitlement-tokens on|off] [--entitlement-token-ttl SECONDS (30..86400, default 300)]
        app_purchase_entitlements: customers whose AppTransaction originalApplicationVersion is lower than VERSION
        (dotted numeric; on iOS the build number) get the named entitlements.

        create: --account names the owning account (required once there are several; bouncer account list).
        rotate-keys: without --key both keys rotate. The replaced key keeps working for --grace-seconds
        (default 2592000 = 30 days for public, 86400 = 24 h for secret; 0 retires it at once; at most 31536000).

        Prints JSON as the admin API does. The secret key is shown only by create and rotate-keys.
        Exit status: 0 done, 1 failed (unknown project, database), 2 invalid arguments (nothing changed).
        Uses DATABASE_URL, or else the embedded PostgreSQL under BOUNCER_DATA_DIR.

        """

    static let productUsage = """
        usage: bouncer product set PROJECT_ID PRODUCT_ID ENTITLEMENT...
               bouncer product list PROJECT_ID
               bouncer product delete PROJECT_ID PRODUCT_ID

        Maps an App Store product to the entitlements it grants while active (at most 100).

        """

    public static let projectCommand = Command(name: "project",
                                        summary: "Create, update, list, show, delete projects; rotate keys; App Store credentials",
                                        usage: projectUsage) { args in
        if args.first == "credentials" { return CredentialCommands.run(Array(args.dropFirst())) }
        return run(args, usage: projectUsage) { args throws(UsageError) in try project(args) }
    }

    public static let productCommand = Command(name: "product", summary: "Map products to entitlements",
                                        usage: productUsage) { args in
        run(args, usage: productUsage) { args throws(UsageError) in try product(args) }
    }

    struct UsageError: Error {
        let message: String

        /// `bouncer <group> <subcommand>` with a subcommand the group does not have (or none).
        static func unknownSubcommand(_ group: String, _ args: [String]) -> UsageError {
            UsageError(message: "unknown \(group) command '\(args.first ?? "")'")
        }
    }

    /// Parses a subcommand's arguments into what it does once the database is open (JSON lines to print).
    private typealias Parse = ([String]) throws(UsageError) -> Work
    private typealias Work = (ProjectAdministration) throws -> [[UInt8]]

    private static func run(_ args: [String], usage: String, _ parse: Parse) -> Int32 {
        run(args, usage: usage, parse) { _, database in
            ProjectAdministration(
                store: PostgresProjectStore(pool: database.pool), hasher: SHA256SecretHasher(), now: { Date() })
        }
    }

    /// Parses `args` (usage errors: exit 2, nothing opened), opens the database, builds the use cases with
    /// `administration`, runs the work and prints its JSON: the frame of every admin subcommand.
    static func run<Administration>(
        _ args: [String], usage: String,
        _ parse: ([String]) throws(UsageError) -> (Administration) throws -> [[UInt8]],
        administration: (ServeSettings, Database) -> Administration
    ) -> Int32 {
        if args.first == "--help" || args.first == "-h" || args.isEmpty {
            if args.isEmpty { CLI.err(usage); return 2 }
            CLI.out(usage)
            return 0
        }
        let work: (Administration) throws -> [[UInt8]]
        do {
            work = try parse(args)
        } catch {
            CLI.err("bouncer: \(error.message)\n\n" + usage)
            return 2
        }
        guard let settings = ServeSettings.fromProcessEnvironment(command: "bouncer") else { return 2 }
        let log: @Sendable (String) -> Void = { CLI.err($0 + "\n") }
        guard let database = settings.openDatabase(command: "bouncer", log: log) else { return 1 }
        defer { database.close(log: log) }
        let administration = administration(settings, database)
        do {
            let lines = try CLIAudit.$log.withValue(PostgresAuditLog(pool: database.pool)) { try work(administration) }
            for line in lines {
                let pretty = (try? JSONParser.parse(line).serializedString(pretty: true)) ?? String(decoding: line, as: UTF8.self)
                CLI.out(pretty + "\n")
            }
            return 0
        } catch let error as DomainError where error.code == .invalidInput {
            // The use case's rules refused the arguments before anything was written: a usage error.
            let lines = error.details.map { "  \($0.path.joined(separator: ".")): \($0.message)\n" }.joined()
            CLI.err("bouncer: \(error.message)\n" + lines + "\n" + usage)
            return 2
        } catch {
            CLI.err("bouncer: \(error)\n")
            return 1
        }
    }

    private static func project(_ args: [String]) throws(UsageError) -> Work {
        switch args.first {
        case "create":
            var rest = Array(args.dropFirst())
            var accountId: UUID?
            if let i = rest.firstIndex(of: "--account") {
                guard i + 1 < rest.count else { throw UsageError(message: "--account needs a value") }
                accountId = try AccountCommands.uuid(rest[i + 1], "--account")
                rest.removeSubrange(i...(i + 1))
            }
            let parsed = try settings(rest[...])
            guard let name = parsed.name, let bundleId = parsed.bundleId else {
                throw UsageError(message: "--name and --bundle-id are required")
            }
            var project = NewProject(name: name, bundleId: bundleId, settings: parsed.changes)
            project.accountId = accountId
            let new = project
            return CLIAudit.recorded("POST", "/v1/admin/projects", accountId: accountId) { admin in
                [Representations.project(try admin.createProject(new))]
            }
        case "update":
            let id = try projectId(args)
            let parsed = try settings(args.dropFirst(2))
            var changes = parsed.changes
            changes.name = parsed.name
            changes.bundleId = parsed.bundleId
            guard changes != ProjectChanges() else { throw UsageError(message: "update needs at least one option") }
            let change = changes
            return CLIAudit.recorded("PATCH", "/v1/admin/projects/:id", parameters: ["id": args[1]], projectId: id) {
                admin in [Representations.project(try admin.updateProject(id: id, change))]
            }
        case "list":
            guard args.count == 1 else { throw UsageError(message: "list takes no arguments") }
            return { admin in [Representations.projects(try admin.allProjects())] }
        case "show":
            guard args.count == 2 else { throw UsageError(message: "show needs PROJECT_ID") }
            let id = try projectId(args)
            return { admin in [Representations.project(try admin.project(id: id))] }
        case "delete":
            guard args.count == 2 else { throw UsageError(message: "delete needs PROJECT_ID") }
            let id = try projectId(args)
            return CLIAudit.recorded("DELETE", "/v1/admin/projects/:id", parameters: ["id": args[1]], projectId: id) {
                admin in
                try admin.deleteProject(id: id)
                return []
            }
        case "rotate-keys":
            let id = try projectId(args)
            var kind: ProjectKeyKind?
            var grace: Int?
            var rest = ArraySlice(args.dropFirst(2))
            while let flag = rest.popFirst() {
                guard let value = rest.popFirst(), !value.isEmpty else { throw UsageError(message: "\(flag) needs a value") }
                switch flag {
                case "--key":
                    guard let k = ProjectKeyKind(rawValue: value) else { throw UsageError(message: "--key must be public or secret") }
                    kind = k
                case "--grace-seconds":
                    guard let n = Int(value) else { throw UsageError(message: "--grace-seconds must be an integer") }
                    grace = n
                default: throw UsageError(message: "unknown option \(flag)")
                }
            }
            let chosen = kind.map { ProjectAdministration.Rotation(kind: $0, graceSeconds: grace) }
                ?? ProjectAdministration.Rotation(graceSeconds: grace)
            return CLIAudit.recorded("POST", "/v1/admin/projects/:id/rotate-keys", parameters: ["id": args[1]],
                                     projectId: id) { admin in
                [Representations.project(try admin.rotateKeys(id: id, chosen))]
            }
        default:
            throw UsageError.unknownSubcommand("project", args)
        }
    }

    private static func boolean(_ flag: String, _ value: String) throws(UsageError) -> Bool {
        switch value {
        case "true": return true
        case "false": return false
        default: throw UsageError(message: "\(flag) must be true or false")
        }
    }

    /// The options `create` and `update` share, as a change set plus name and bundle id.
    private static func settings(_ args: ArraySlice<String>) throws(UsageError)
        -> (name: String?, bundleId: String?, changes: ProjectChanges)
    {
        var name: String?
        var bundleId: String?
        var changes = ProjectChanges()
        var environments: [StoreEnvironment] = []
        var purchasedBefore: String?
        var appPurchaseEntitlements: [String] = []
        var rest = args
        func value(_ flag: String) throws(UsageError) -> String {
            guard let v = rest.popFirst(), !v.isEmpty else { throw UsageError(message: "\(flag) needs a value") }
            return v
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--name": name = try value(flag)
            case "--bundle-id": bundleId = try value(flag)
            case "--app-apple-id":
                guard let n = Int64(try value(flag)) else { throw UsageError(message: "--app-apple-id must be an integer") }
                changes.appAppleId = .some(n)
            case "--environment":
                environments.append(StoreEnvironment(rawValue: try value(flag)))
            case "--transfer-policy":
                guard let p = TransferPolicy(rawValue: try value(flag)) else {
                    throw UsageError(message: "--transfer-policy must be transfer, share or block")
                }
                changes.transferPolicy = p
            case "--app-account-token-policy":
                guard let p = AppAccountTokenPolicy(rawValue: try value(flag)) else {
                    throw UsageError(message: "--app-account-token-policy must be ignore, require_match or prefer")
                }
                changes.appAccountTokenPolicy = p
            case "--consumption-response":
                guard let r = ConsumptionResponse(rawValue: try value(flag)) else {
                    throw UsageError(message: "--consumption-response must be off or auto")
                }
                changes.consumption.response = r
            case "--consumption-customer-consented":
                changes.consumption.customerConsented = try boolean(flag, try value(flag))
            case "--consumption-sample-content-provided":
                changes.consumption.sampleContentProvided = try boolean(flag, try value(flag))
            case "--consumption-refund-preference":
                let v = try value(flag)
                if v == "none" {
                    changes.consumption.refundPreference = .some(nil)
                } else if let preference = RefundPreference(rawValue: v) {
                    changes.consumption.refundPreference = .some(preference)
                } else {
                    throw UsageError(message: "--consumption-refund-preference must be DECLINE, GRANT_FULL, GRANT_PRORATED or none")
                }
            case "--app-purchased-before": purchasedBefore = try value(flag)
            case "--app-purchase-entitlement": appPurchaseEntitlements.append(try value(flag))
            case "--no-app-purchase-entitlements": changes.appPurchaseEntitlements = .some(nil)
            case "--allow-xcode": changes.allowXcode = true
            case "--require-secret-key": changes.requireSecretKeyForReads = true
            case "--entitlement-tokens":
                switch try value(flag) {
                case "on": changes.entitlementTokens = true
                case "off": changes.entitlementTokens = false
                default: throw UsageError(message: "--entitlement-tokens must be on or off")
                }
            case "--entitlement-token-ttl":
                guard let n = Int(try value(flag)) else {
                    throw UsageError(message: "--entitlement-token-ttl must be an integer (seconds)")
                }
                changes.entitlementTokenTTLSeconds = n
            default: throw UsageError(message: "unknown option \(flag)")
            }
        }
        if !environments.isEmpty { changes.environments = environments }
        if let purchasedBefore {
            changes.appPurchaseEntitlements = .some(AppPurchaseEntitlements(
                purchasedBeforeVersion: purchasedBefore, entitlements: appPurchaseEntitlements))
        } else if !appPurchaseEntitlements.isEmpty {
            throw UsageError(message: "--app-purchase-entitlement needs --app-purchased-before VERSION")
        }
        return (name, bundleId, changes)
    }

    private static func product(_ args: [String]) throws(UsageError) -> Work {
        switch args.first {
        case "set":
            guard args.count >= 3 else { throw UsageError(message: "set needs PROJECT_ID PRODUCT_ID ENTITLEMENT...") }
            let id = try projectId(args)
            let productId = args[2]
            let entitlements = Array(args.dropFirst(3))
            return CLIAudit.recorded("PUT", "/v1/admin/projects/:id/products/:productId",
                                     parameters: ["id": args[1], "productId": productId], projectId: id) { admin in
                [Representations.product(try admin.setProduct(projectId: id, productId: productId, entitlements: entitlements))]
            }
        case "list":
            guard args.count == 2 else { throw UsageError(message: "list needs PROJECT_ID") }
            let id = try projectId(args)
            return { admin in [Representations.products(try admin.products(projectId: id))] }
        case "delete":
            guard args.count == 3 else { throw UsageError(message: "delete needs PROJECT_ID PRODUCT_ID") }
            let id = try projectId(args)
            let productId = args[2]
            return CLIAudit.recorded("DELETE", "/v1/admin/projects/:id/products/:productId",
                                     parameters: ["id": args[1], "productId": productId], projectId: id) { admin in
                try admin.deleteProduct(projectId: id, productId: productId)
                return []
            }
        default:
            throw UsageError.unknownSubcommand("product", args)
        }
    }

    /// `{"<key>": [items…]}`, the admin API's list shape, so scripts parse one document.
    private static func projectId(_ args: [String]) throws(UsageError) -> UUID {
        guard args.count >= 2, let id = UUID(uuidString: args[1]) else {
            throw UsageError(message: "PROJECT_ID must be a UUID")
        }
        return id
    }
}
