import Domain
import Foundation
import Postgres
@testable import Storage

/// Records `t` (bound to `userId`, when given) by a direct call of `bouncer_record_transaction` that reads nothing
/// back: for tests that write under an earlier schema, whose function returns fewer columns than today's store reads
/// (the stored facts arrived in schema/0094).
func recordUnderEarlierSchema(_ pool: ConnectionPool, _ t: TransactionFacts, userId: String?, project: Project,
                              now: Date) throws {
    try pool.withConnection { c in
        try PostgresPurchaseStore.call(recording: t, userId: userId, project: project, now: now, source: .receipt, on: c)
    }
}
