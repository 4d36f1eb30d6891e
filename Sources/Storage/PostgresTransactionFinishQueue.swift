public import Domain
public import Foundation
import Postgres

/// The Finish Transaction queue (schema/0047's `transaction_finishes`, filled by the deriver from the change log):
/// workers claim due rows with `FOR UPDATE SKIP LOCKED` and a lease, so two instances never hold the same row, and a
/// worker that dies mid-call leaves its rows to be claimed again when their lease lapses (Apple takes a repeated
/// finish: finishing a finished transaction changes nothing).
public final class PostgresTransactionFinishQueue: PostgresStore, @unchecked Sendable, TransactionFinishQueue {
    /// Claims due rows, oldest due first.
    public func claimDue(now: Date, leaseSeconds: Int, limit: Int) throws -> [TransactionFinish] {
        let token = UUID()
        let leaseUntil = now.addingTimeInterval(TimeInterval(max(1, leaseSeconds)))
        return try StorageErrors.mapping("claim transaction finishes") {
            try pool.autocommit { connection in
                let due = Self.dueProjects(in: "transaction_finishes", now: now, limit: limit)
                return try claimAcrossProjects(on: connection, limit: max(1, limit), dueProjects: due) { project, limit in
                    try connection.query("""
                        WITH due AS (
                            SELECT f.project_id, f.environment, f.transaction_id FROM transaction_finishes f
                            WHERE f.status = 'pending' AND f.next_attempt_at <= \(now)
                              AND (f.lease_until IS NULL OR f.lease_until <= \(now))\(unsafeSQL: Self.projectScope("f.project_id", project))
                            ORDER BY f.next_attempt_at
                            LIMIT \(Int64(limit))
                            FOR UPDATE SKIP LOCKED)
                        UPDATE transaction_finishes f SET attempts = f.attempts + 1, lease_until = \(leaseUntil),
                            lease_token = \(token), updated_at = \(now)
                        FROM due
                        WHERE f.project_id = due.project_id AND f.environment = due.environment
                          AND f.transaction_id = due.transaction_id
                        RETURNING f.project_id, f.environment, f.transaction_id, f.attempts
                        """).map { row in
                        TransactionFinish(
                            projectId: try row.decode("project_id", as: UUID.self),
                            environment: StoreEnvironment(rawValue: try row.decode("environment", as: String.self)),
                            transactionId: try row.decode("transaction_id", as: String.self),
                            attempts: try row.decode("attempts", as: Int.self),
                            leaseToken: token)
                    }
                }
            }
        }
    }

    /// Writes the outcome while the claim's token still holds the row; releases the lease.
    public func complete(_ item: TransactionFinish, outcome: TransactionFinishOutcome, now: Date) throws -> Bool {
        var lastError: String?
        var appleCode: Int?
        var finishedAt: Date?
        var nextAttempt = now
        switch outcome {
        case .finished:
            finishedAt = now
        case .retry(let at, let reason):
            lastError = reason
            nextAttempt = at
        case .failed(let reason, let code):
            lastError = reason
            appleCode = code
        }
        // Bounded: our reasons and Apple's message are short, but nothing unbounded goes into a row.
        lastError = lastError.map { String($0.prefix(1000)) }
        return try StorageErrors.mapping("complete transaction finish") {
            try pool.autocommit { connection in
                try connection.execute("""
                    UPDATE transaction_finishes SET status = \(outcome.status),
                        last_error = \(Bind.text(lastError)), apple_error_code = \(Bind.int(appleCode))::int,
                        finished_at = \(Bind.date(finishedAt)), next_attempt_at = \(nextAttempt),
                        lease_until = NULL, lease_token = NULL, updated_at = \(now)
                    WHERE project_id = \(item.projectId) AND environment = \(item.environment.rawValue)
                      AND transaction_id = \(item.transactionId) AND lease_token = \(item.leaseToken)
                      AND status = 'pending'
                    """) == 1
            }
        }
    }
}
