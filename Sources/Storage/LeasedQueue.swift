import Domain
import Foundation
import Postgres

/// A durable work queue's lease, the one author of its claim and completion statements (`consumption_requests`,
/// `transaction_finishes`): workers claim due `pending` rows with `FOR UPDATE SKIP LOCKED` and a lease
/// (`lease_until`, `lease_token`), so two instances never hold the same row and a worker that dies mid-call leaves
/// its rows to be claimed again when their lease lapses; an outcome is written only while the claim's token still
/// holds the row.
///
/// A queue's table has `project_id`, `environment`, its own key column, `status`, `attempts`, `next_attempt_at`,
/// `last_error`, `apple_error_code`, `lease_until`, `lease_token` and `updated_at`. The statements name it `q`.
struct LeasedQueue {
    /// The table.
    let table: String
    /// The row's key after `project_id` and `environment` (`transaction_id`, `notification_uuid`).
    let key: String
    /// What the claim reads beside each due row's key, each preceded by ", " (`q.` columns, or columns of `join`),
    /// returned as `due.NAME`.
    var dueColumns = ""
    /// A `LEFT JOIN …` beside the queue's row, or "".
    var join = ""
    /// The claim's `RETURNING` list beside the columns every queue has (`ClaimedRow`): `q.` for the updated row,
    /// `due.` for what `dueColumns` read.
    let returning: String

    /// Claims up to `limit` due rows, oldest due first, under a new token leased for `leaseSeconds` (at least 1),
    /// counting an attempt each; `decode` reads each returned row.
    /// On Citus the claim runs per project with due rows (`PostgresStore.claimAcrossProjects`).
    func claim<Item>(_ what: StaticString, on store: PostgresStore, now: Date, leaseSeconds: Int, limit: Int,
                     decode: (ClaimedRow) throws -> Item) throws -> [Item] {
        let token = UUID()
        let leaseUntil = now.addingTimeInterval(TimeInterval(max(1, leaseSeconds)))
        return try StorageErrors.mapping(what) {
            try store.pool.autocommit { connection in
                let due = PostgresStore.dueProjects(in: table, now: now, limit: limit)
                return try store.claimAcrossProjects(on: connection, limit: max(1, limit),
                                                     dueProjects: due) { project, limit in
                    let scope = PostgresStore.projectScope("q.project_id", project)
                    return try connection.query("""
                        WITH due AS (
                            SELECT q.project_id, q.environment, q.\(unsafeSQL: key)\(unsafeSQL: dueColumns)
                            FROM \(unsafeSQL: table) q \(unsafeSQL: join)
                            WHERE q.status = 'pending' AND q.next_attempt_at <= \(now)
                              AND (q.lease_until IS NULL OR q.lease_until <= \(now))\(unsafeSQL: scope)
                            ORDER BY q.next_attempt_at
                            LIMIT \(Int64(limit))
                            FOR UPDATE OF q SKIP LOCKED)
                        UPDATE \(unsafeSQL: table) q SET attempts = q.attempts + 1, lease_until = \(leaseUntil),
                            lease_token = \(token), updated_at = \(now)
                        FROM due
                        WHERE q.project_id = due.project_id AND q.environment = due.environment
                          AND q.\(unsafeSQL: key) = due.\(unsafeSQL: key)
                        RETURNING q.project_id, q.environment, q.attempts, \(unsafeSQL: returning)
                    """).map { try decode(ClaimedRow(row: $0, token: token)) }
                }
            }
        }
    }

    /// A claimed row as `claim`'s `decode` reads it: the columns every queue has, decoded here, and the queue's own
    /// (`returning`) in `row`.
    struct ClaimedRow {
        /// The returned row.
        let row: Row
        /// The tenant.
        let projectId: UUID
        /// The row's environment.
        let environment: StoreEnvironment
        /// Attempts so far, this claim's included.
        let attempts: Int
        /// The claim's token.
        let token: UUID

        fileprivate init(row: Row, token: UUID) throws {
            self.row = row
            projectId = try row.decode("project_id", as: UUID.self)
            environment = StoreEnvironment(rawValue: try row.decode("environment", as: String.self))
            attempts = try row.decode("attempts", as: Int.self)
            self.token = token
        }
    }

    /// The claimed row an outcome is written to.
    struct Claimed<Key: PostgresEncodable> {
        /// The tenant.
        var projectId: UUID
        /// The row's environment (raw value).
        var environment: String
        /// The value of the queue's `key` column.
        var key: Key
        /// The claim's token.
        var token: UUID
    }

    /// What every outcome writes: its status, why (bounded to 1,000 characters: our reasons and Apple's messages are
    /// short, but nothing unbounded goes into a row), Apple's error code and the next attempt's time.
    struct Outcome {
        /// The row's new `status`.
        var status: String
        /// `last_error`.
        var lastError: String?
        /// `apple_error_code`.
        var appleCode: Int?
        /// `next_attempt_at`.
        var nextAttempt: Date

        /// An outcome; a final (or done) one is written with `nextAttempt` at the time it was reached.
        init(status: String, nextAttempt: Date, reason: String? = nil, appleCode: Int? = nil) {
            self.status = status
            lastError = reason
            self.appleCode = appleCode
            self.nextAttempt = nextAttempt
        }

        /// Pending again, due at `at`, for `reason`.
        static func retry(at: Date, reason: String) -> Outcome {
            Outcome(status: "pending", nextAttempt: at, reason: reason)
        }
    }

    /// Writes `outcome` and the queue's own `columns` (`name = value, …` with a trailing comma) while the claim's
    /// token still holds the row and it is pending, releasing the lease; whether it was written.
    func complete<Key>(_ what: StaticString, on pool: ConnectionPool, _ row: Claimed<Key>, _ outcome: Outcome,
                       now: Date, columns: Fragment = "") throws -> Bool {
        let lastError = outcome.lastError.map { String($0.prefix(1000)) }
        return try StorageErrors.mapping(what) {
            try pool.autocommit { connection in
                try connection.execute("""
                    UPDATE \(unsafeSQL: table) SET status = \(outcome.status), \(columns)
                        last_error = \(Bind.text(lastError)), apple_error_code = \(Bind.int(outcome.appleCode))::int,
                        next_attempt_at = \(outcome.nextAttempt), lease_until = NULL, lease_token = NULL,
                        updated_at = \(now)
                    WHERE project_id = \(row.projectId) AND environment = \(row.environment)
                      AND \(unsafeSQL: key) = \(row.key) AND lease_token = \(row.token) AND status = 'pending'
                    """) == 1
            }
        }
    }
}

/// Part of a statement, written like a `Query` (literal SQL, interpolated binds) and interpolated into one, its binds
/// numbered in place.
struct Fragment: ExpressibleByStringInterpolation {
    fileprivate enum Part {
        case sql(String)
        case value(PostgresValue)
    }

    fileprivate var parts: [Part]

    init(stringLiteral value: String) { parts = [.sql(value)] }

    init(stringInterpolation: Interpolation) { parts = stringInterpolation.parts }

    /// Collects the literal and bound parts.
    struct Interpolation: StringInterpolationProtocol {
        fileprivate var parts: [Part] = []

        init(literalCapacity: Int, interpolationCount: Int) {}

        mutating func appendLiteral(_ literal: String) { parts.append(.sql(literal)) }

        mutating func appendInterpolation(_ value: some PostgresEncodable) { parts.append(.value(value.postgresValue)) }

        /// Appends another fragment's SQL and binds.
        mutating func appendInterpolation(_ fragment: Fragment) { parts += fragment.parts }
    }
}

extension Query.StringInterpolation {
    /// Appends `fragment`'s SQL and binds.
    fileprivate mutating func appendInterpolation(_ fragment: Fragment) {
        for part in fragment.parts {
            switch part {
            case .sql(let sql): appendLiteral(sql)
            case .value(let value): appendInterpolation(value)
            }
        }
    }
}
