public import Domain
public import Foundation
import Postgres

/// The Finish Transaction queue (schema/0047's `transaction_finishes`, filled by the deriver from the change log),
/// leased as `LeasedQueue` says: a worker that dies mid-call leaves its rows to be claimed again (Apple takes a
/// repeated finish: finishing a finished transaction changes nothing).
public final class PostgresTransactionFinishQueue: PostgresStore, @unchecked Sendable, TransactionFinishQueue {
    private static let queue = LeasedQueue(table: "transaction_finishes", key: "transaction_id",
                                           returning: "q.transaction_id")

    /// Claims due rows, oldest due first.
    public func claimDue(now: Date, leaseSeconds: Int, limit: Int) throws -> [TransactionFinish] {
        try Self.queue.claim("claim transaction finishes", on: self, now: now, leaseSeconds: leaseSeconds,
                             limit: limit) { claimed in
            TransactionFinish(projectId: claimed.projectId, environment: claimed.environment,
                              transactionId: try claimed.row.decode("transaction_id", as: String.self),
                              attempts: claimed.attempts, leaseToken: claimed.token)
        }
    }

    /// Writes the outcome while the claim's token still holds the row; releases the lease.
    public func complete(_ item: TransactionFinish, outcome: TransactionFinishOutcome, now: Date) throws -> Bool {
        let written: LeasedQueue.Outcome
        var finishedAt: Date?
        switch outcome {
        case .finished:
            finishedAt = now
            written = .init(status: outcome.status, nextAttempt: now)
        case .retry(let at, let reason):
            written = .retry(at: at, reason: reason)
        case .failed(let reason, let code):
            written = .init(status: outcome.status, nextAttempt: now, reason: reason, appleCode: code)
        }
        let row = LeasedQueue.Claimed(projectId: item.projectId, environment: item.environment.rawValue,
                                      key: item.transactionId, token: item.leaseToken)
        return try Self.queue.complete("complete transaction finish", on: pool, row, written, now: now,
                                         columns: "finished_at = \(Bind.date(finishedAt)),")
    }
}
