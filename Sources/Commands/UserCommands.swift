import API
import Domain
import Foundation
import Storage

/// `bouncer user …`: grants, timeline, export and erase straight against the database, through the same use cases
/// (`CustomerSupport`) and JSON as the admin API's `/v1/admin/projects/:id/users/:userId/…` routes.
public enum UserCommands {
    static let usage = """
        usage: bouncer user grant PROJECT_ID USER_ID ENTITLEMENT --reason TEXT [--expires-at 2027-01-01T00:00:00Z]
               bouncer user revoke-grant PROJECT_ID USER_ID GRANT_ID
               bouncer user timeline PROJECT_ID USER_ID
               bouncer user export PROJECT_ID USER_ID
               bouncer user erase PROJECT_ID USER_ID

        grant: gives the entitlement until --expires-at (or with no end). revoke-grant marks it removed (kept for the
        timeline). timeline: why each entitlement is or is not active, and everything that touched the user. export:
        everything stored about the user. erase: removes the user's identity in one database transaction (README,
        "Customers": what is deleted and what is kept). Grants and erasures are announced to running servers' caches.

        Prints JSON as the admin API does. Exit status: 0 done, 1 failed (unknown project or grant, database),
        2 invalid arguments (nothing changed). Uses DATABASE_URL, or else the embedded PostgreSQL under BOUNCER_DATA_DIR.

        """

    public static let command = Command(name: "user", summary: "Grants, timeline, export and erase of one user of a project",
                                 usage: usage) { args in
        AdminCommands.run(args, usage: usage, parse) { _, database in
            CustomerSupport(
                store: AnnouncingCustomerStore(inner: PostgresCustomerStore(pool: database.pool)) { messages in
                    // The CLI has no listener: announce straight on the channel the servers listen on.
                    CacheSynchronizer.notify(pool: database.pool, messages)
                },
                projects: PostgresProjectStore(pool: database.pool), now: { Date() })
        }
    }

    private static func parse(_ args: [String]) throws(AdminCommands.UsageError) -> (CustomerSupport) throws -> [[UInt8]] {
        guard let verb = args.first else { throw AdminCommands.UsageError(message: "a subcommand is required") }
        guard args.count >= 3, let projectId = UUID(uuidString: args[1]) else {
            throw AdminCommands.UsageError(message: "PROJECT_ID (a UUID) and USER_ID are required")
        }
        let userId = args[2]
        let rest = Array(args.dropFirst(3))
        switch verb {
        case "grant":
            guard let entitlement = rest.first else { throw AdminCommands.UsageError(message: "ENTITLEMENT is required") }
            var reason: String?
            var expiresAt: Date?
            var i = 1
            while i < rest.count {
                guard i + 1 < rest.count else { throw AdminCommands.UsageError(message: "\(rest[i]) needs a value") }
                switch rest[i] {
                case "--reason": reason = rest[i + 1]
                case "--expires-at":
                    guard let date = AdminTimestamp.parse(rest[i + 1]) else {
                        throw AdminCommands.UsageError(message: "--expires-at must be like 2027-01-01T00:00:00Z")
                    }
                    expiresAt = date
                default: throw AdminCommands.UsageError(message: "unknown option \(rest[i])")
                }
                i += 2
            }
            guard let reason else { throw AdminCommands.UsageError(message: "--reason is required") }
            let new = NewGrant(userId: userId, entitlement: entitlement, expiresAt: expiresAt, reason: reason)
            return { support in
                [Representations.grant(try support.grant(projectId: projectId, new), at: support.now())]
            }
        case "revoke-grant":
            guard rest.count == 1, let grantId = UUID(uuidString: rest[0]) else {
                throw AdminCommands.UsageError(message: "GRANT_ID (a UUID) is required")
            }
            return { support in
                [Representations.grant(try support.revokeGrant(projectId: projectId, userId: userId, grantId: grantId),
                                       at: support.now())]
            }
        case "timeline":
            try noMore(rest)
            return { support in [Representations.timeline(try support.timeline(projectId: projectId, userId: userId))] }
        case "export":
            try noMore(rest)
            return { support in
                let (facts, timeline) = try support.export(projectId: projectId, userId: userId)
                return [Representations.export(facts, timeline: timeline, at: support.now())]
            }
        case "erase":
            try noMore(rest)
            return { support in
                [Representations.erasure(userId: userId, try support.erase(projectId: projectId, userId: userId))]
            }
        default:
            throw AdminCommands.UsageError(message: "unknown subcommand \(verb)")
        }
    }

    private static func noMore(_ rest: [String]) throws(AdminCommands.UsageError) {
        guard rest.isEmpty else { throw AdminCommands.UsageError(message: "unexpected argument \(rest[0])") }
    }
}
