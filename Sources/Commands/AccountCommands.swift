import API
import Domain
import Foundation
import Jobs
import Storage
import Verification

/// `bouncer account …`, `bouncer member …` and `bouncer api-key …`: the operator's control plane straight against
/// the database, through the admin API's use cases (`AccountAdministration`, `MemberAdministration`) acting as the
/// operator, printing the admin API's JSON. Each change is audited as the operator labelled `cli` (`CLIAudit`).
public enum AccountCommands {
    static let accountUsage = """
        usage: bouncer account create NAME
               bouncer account list

        An account is a customer of the operator: it owns projects (bouncer project create … --account ID), members
        and API keys. Prints JSON as POST and GET /v1/admin/accounts do.
        Exit status: 0 done, 1 failed (database), 2 invalid arguments (nothing changed).
        Uses DATABASE_URL, or else the embedded PostgreSQL under BOUNCER_DATA_DIR.

        """

    static let memberUsage = """
        usage: bouncer member add ACCOUNT_ID EMAIL ROLE
               bouncer member list ACCOUNT_ID
               bouncer member remove ACCOUNT_ID MEMBER_ID

        ROLE: owner, admin, developer, viewer or support. add invites the person: the printed invite_token (shown
        only now) sets their password through POST /v1/admin/invites/accept within 7 days. remove ends their
        sessions. An account keeps at least one active owner. Prints JSON as the admin API does.
        Exit status: 0 done, 1 failed (unknown account or member, last owner, email taken, database),
        2 invalid arguments (nothing changed). Uses DATABASE_URL, or else the embedded PostgreSQL under BOUNCER_DATA_DIR.

        """

    static let apiKeyUsage = """
        usage: bouncer api-key create ACCOUNT_ID NAME ROLE [--project PROJECT_ID]... [--expires-at 2027-01-01T00:00:00Z]
               bouncer api-key list ACCOUNT_ID
               bouncer api-key revoke ACCOUNT_ID KEY_ID

        ROLE: owner, admin, developer, viewer or support. --project limits the key to the account's projects named
        (at most 100; default every project). The printed key (bk_…) is shown only now: Bouncer keeps its SHA-256.
        revoke stops the key at once. Prints JSON as the admin API does.
        Exit status: 0 done, 1 failed (unknown account or key, database), 2 invalid arguments (nothing changed).
        Uses DATABASE_URL, or else the embedded PostgreSQL under BOUNCER_DATA_DIR.

        """

    /// `bouncer account`.
    public static let accountCommand = Command(name: "account", summary: "Create and list accounts", usage: accountUsage) {
        run($0, usage: accountUsage, account)
    }

    /// `bouncer member`.
    public static let memberCommand = Command(name: "member", summary: "Invite, list and remove an account's members",
                                              usage: memberUsage) {
        run($0, usage: memberUsage, member)
    }

    /// `bouncer api-key`.
    public static let apiKeyCommand = Command(name: "api-key", summary: "Create, list and revoke an account's API keys",
                                              usage: apiKeyUsage) {
        run($0, usage: apiKeyUsage, apiKey)
    }

    /// The use cases a subcommand needs, over the database.
    struct Administration {
        let accounts: AccountAdministration
        let members: MemberAdministration

        /// The account with `id`, as the API's route scope requires before an account's routes: else "No account".
        func requireAccount(_ id: UUID) throws {
            _ = try accounts.account(id: id, for: .operator)
        }
    }

    typealias UsageError = AdminCommands.UsageError
    private typealias Work = (Administration) throws -> [[UInt8]]

    private static func run(_ args: [String], usage: String, _ parse: ([String]) throws(UsageError) -> Work) -> Int32 {
        AdminCommands.run(args, usage: usage, parse) { settings, database in
            let hasher = SHA256SecretHasher()
            return Administration(
                accounts: AccountAdministration(
                    store: PostgresAccountStore(pool: database.pool), projects: PostgresProjectStore(pool: database.pool),
                    hasher: hasher, now: { Date() }),
                members: MemberAdministration(
                    store: PostgresMemberStore(pool: database.pool), crypto: OpenSSLMemberCryptography(), hasher: hasher,
                    sealer: AESGCMCredentialSealer(settings: settings), now: { Date() }))
        }
    }

    private static func account(_ args: [String]) throws(UsageError) -> Work {
        switch args.first {
        case "create":
            guard args.count == 2 else { throw UsageError(message: "create needs NAME") }
            let name = args[1]
            return CLIAudit.recorded("POST", "/v1/admin/accounts") { admin in
                [Representations.account(try admin.accounts.createAccount(name: name))]
            }
        case "list":
            guard args.count == 1 else { throw UsageError(message: "list takes no arguments") }
            return { admin in [Representations.accounts(try admin.accounts.accounts(for: .operator))] }
        default:
            throw UsageError.unknownSubcommand("account", args)
        }
    }

    /// The admin route the account subcommands audit themselves as (`CLIAudit`), below which members and keys sit.
    private static let accountRoute = "/v1/admin/accounts/:id"

    private static func member(_ args: [String]) throws(UsageError) -> Work {
        switch args.first {
        case "add":
            guard args.count == 4 else { throw UsageError(message: "add needs ACCOUNT_ID EMAIL ROLE") }
            let accountId = try uuid(args[1], "ACCOUNT_ID")
            let email = args[2]
            let role = try role(args[3])
            return CLIAudit.recorded("POST", accountRoute + "/members", parameters: ["id": args[1]], accountId: accountId) {
                admin in
                try admin.requireAccount(accountId)
                return [Representations.member(
                    try admin.members.invite(accountId: accountId, email: email, role: role, by: .operator))]
            }
        case "list":
            guard args.count == 2 else { throw UsageError(message: "list needs ACCOUNT_ID") }
            let accountId = try uuid(args[1], "ACCOUNT_ID")
            return { admin in
                try admin.requireAccount(accountId)
                return [Representations.members(try admin.members.members(accountId: accountId))]
            }
        case "remove":
            return try deleteChild(args, "remove", "MEMBER_ID", route: "/members/:memberId", parameter: "memberId") {
                admin, accountId, memberId in try admin.members.remove(accountId: accountId, id: memberId, by: .operator)
            }
        default:
            throw UsageError.unknownSubcommand("member", args)
        }
    }

    /// `<verb> ACCOUNT_ID <child>`: removes one of an account's members or keys, audited as the admin route's DELETE.
    private static func deleteChild(
        _ args: [String], _ verb: String, _ child: String, route: String, parameter: String,
        _ delete: @escaping (Administration, UUID, UUID) throws -> Void
    ) throws(UsageError) -> Work {
        guard args.count == 3 else { throw UsageError(message: "\(verb) needs ACCOUNT_ID \(child)") }
        let accountId = try uuid(args[1], "ACCOUNT_ID")
        let childId = try uuid(args[2], child)
        return CLIAudit.recorded("DELETE", accountRoute + route, parameters: ["id": args[1], parameter: args[2]],
                                 accountId: accountId) { admin in
            try admin.requireAccount(accountId)
            try delete(admin, accountId, childId)
            return []
        }
    }

    private static func apiKey(_ args: [String]) throws(UsageError) -> Work {
        switch args.first {
        case "create":
            guard args.count >= 4 else { throw UsageError(message: "create needs ACCOUNT_ID NAME ROLE") }
            let accountId = try uuid(args[1], "ACCOUNT_ID")
            var new = NewAPIKey(name: args[2], role: try role(args[3]))
            var rest = args.dropFirst(4)
            while let flag = rest.popFirst() {
                guard let value = rest.popFirst(), !value.isEmpty else { throw UsageError(message: "\(flag) needs a value") }
                switch flag {
                case "--project": new.projectIds = (new.projectIds ?? []) + [try uuid(value, "--project")]
                case "--expires-at":
                    guard let date = AdminTimestamp.parse(value) else {
                        throw UsageError(message: "--expires-at must be an RFC 3339 instant like 2027-01-01T00:00:00Z")
                    }
                    new.expiresAt = date
                default: throw UsageError(message: "unknown option \(flag)")
                }
            }
            let key = new
            return CLIAudit.recorded("POST", accountRoute + "/api-keys", parameters: ["id": args[1]], accountId: accountId) {
                admin in [Representations.apiKey(try admin.accounts.createAPIKey(accountId: accountId, key, by: .operator))]
            }
        case "list":
            guard args.count == 2 else { throw UsageError(message: "list needs ACCOUNT_ID") }
            let accountId = try uuid(args[1], "ACCOUNT_ID")
            return { admin in [Representations.apiKeys(try admin.accounts.apiKeys(accountId: accountId))] }
        case "revoke":
            return try deleteChild(args, "revoke", "KEY_ID", route: "/api-keys/:keyId", parameter: "keyId") {
                admin, accountId, keyId in try admin.accounts.revokeAPIKey(accountId: accountId, id: keyId)
            }
        default:
            throw UsageError.unknownSubcommand("api-key", args)
        }
    }

    static func uuid(_ text: String, _ name: String) throws(UsageError) -> UUID {
        guard let id = UUID(uuidString: text) else { throw UsageError(message: "\(name) must be a UUID") }
        return id
    }

    private static func role(_ text: String) throws(UsageError) -> Role {
        guard let role = Role(rawValue: text) else {
            throw UsageError(message: "ROLE must be one of " + Role.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return role
    }
}
