public import Postgres
import Foundation
import Domain
import Synchronization

/// What every PostgreSQL store is: statements over a `ConnectionPool` it does not own.
///
/// Each store subclasses it (and restates `@unchecked Sendable`): the pool is `Sendable` and immutable, and a
/// subclass adds only immutable `Sendable` state of its own.
public class PostgresStore: @unchecked Sendable {
    /// The pool every statement of the store runs on.
    let pool: ConnectionPool
    /// Whether the database is a Citus coordinator (deploy/citus.md), learnt on first need.
    private let citus = Mutex<Bool?>(nil)

    /// A store over `pool`; the pool's lifetime is the caller's.
    public init(pool: ConnectionPool) {
        self.pool = pool
    }

    /// A claim across tenants (`FOR UPDATE SKIP LOCKED` over a queue of every project): one statement on one node.
    /// On Citus, which locks rows only in a statement routed to one shard, the same claim runs per project instead,
    /// for the projects `dueProjects` finds (a read of every shard, no lock: column `project_id`), until `limit`.
    /// `claim(project, limit)` runs the claim, filtered to `project` when not nil.
    func claimAcrossProjects<T>(on connection: Connection, limit: Int, dueProjects: Query,
                                claim: (_ project: UUID?, _ limit: Int) throws -> [T]) throws -> [T] {
        guard try isCitus(connection) else { return try claim(nil, limit) }
        var claimed: [T] = []
        for row in try connection.query(dueProjects) where claimed.count < limit {
            claimed += try claim(try row.decode("project_id", as: UUID.self), limit - claimed.count)
        }
        return claimed
    }

    /// The projects with due rows in a lease queue (`status`, `next_attempt_at`, `lease_until`: the consumption and
    /// Finish Transaction queues), for `claimAcrossProjects`. `table` is one of ours, never input.
    static func dueProjects(in table: String, now: Date, limit: Int) -> Query {
        """
        SELECT DISTINCT q.project_id FROM \(unsafeSQL: table) q
        WHERE q.status = 'pending' AND q.next_attempt_at <= \(now) AND (q.lease_until IS NULL OR q.lease_until <= \(now))
        LIMIT \(Int64(max(1, limit)))
        """
    }

    /// `AND <column> = '<project>'` for a claim scoped to one project (a UUID's text: no quoting issue), else "".
    static func projectScope(_ column: String, _ project: UUID?) -> String {
        project.map { " AND \(column) = '\($0.lowercasedText)'::uuid" } ?? ""
    }

    /// Whether `connection` is to a Citus coordinator (checked once per store).
    func isCitus(_ connection: Connection) throws -> Bool {
        if let known = citus.withLock({ $0 }) { return known }
        let found = try Self.hasCitus(connection)
        citus.withLock { $0 = found }
        return found
    }

    /// Whether `connection`'s database has Citus' metadata (`CREATE EXTENSION citus` ran there): a coordinator.
    static func hasCitus(_ connection: Connection) throws -> Bool {
        try connection.query("SELECT to_regclass('pg_dist_partition') IS NOT NULL AS citus").first?
            .decode("citus", as: Bool.self) ?? false
    }
}
