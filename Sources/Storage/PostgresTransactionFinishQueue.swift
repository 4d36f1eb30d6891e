public import Domain
public import Foundation
import Postgres

/// The Finish Transaction queue (schema/0047's `transaction_finishes`, filled by the deriver from the change log),
/// leased as `LeasedQueue` says: a worker that dies mid-call leaves its rows to be claimed again (Apple takes a
/// repeated finish: finishing a finished transaction changes nothing).
public final class PostgresTransactionFinishQueue: PostgresStore, @unchecked Sendable, TransactionFinishQueue {
    private static let queue = LeasedQueue(table: "transaction_finishes", key: "transaction_id",
                                           returning: "q.project_id, q.environment, q.transaction_id, q.attempts")

    /// Claims due rows, oldest due first.
    public func claimDue(now: Date, leaseSeconds: Int, limit: Int) throws -> [TransactionFinish] {
        try Self.queue.claim("claim transaction finishes", on: self, now: now, leaseSeconds: leaseSeconds,
                             limit: limit) { row, token in
            TransactionFinish(
                projectId: try row.decode("project_id", as: UUID.self),
                environment: StoreEnvironment(rawValue: try row.decode("environment", as: String.self)),
                transactionId: try row.decode("transaction_id", as: String.self),
                attempts: try row.decode("attempts", as: Int.self),
                leaseToken: token)
        }
    }

    /// Writes the outcome while the claim's token still holds the row; releases the lease.
    public func complete(_ item: TransactionFinish, outcome: TransactionFinishOutcome, now: Date) throws -> Bool {
        var written = LeasedQueue.Outcome(status: outcome.status, nextAttempt: now)
        var finishedAt: Date?
        switch outcome {
        case .finished:
            finishedAt = now
        case .retry(let at, let reason):
            written.lastError = reason
            written.nextAttempt = at
        case .failed(let reason, let code):
            written.lastError = reason
            written.appleCode = code
        }
        let row = LeasedQueue.Claimed(projectId: item.projectId, environment: item.environment.rawValue,
                                      key: item.transactionId, token: item.leaseToken)
        return try Self.queue.complete("complete transaction finish", on: pool, row, written, now: now,
                                         columns: "finished_at = \(Bind.date(finishedAt)),")
    }
}
