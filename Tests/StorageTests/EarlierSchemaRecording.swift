import Domain
import Foundation
import Postgres
@testable import Storage

/// Records `t` (bound to `userId`, when given) by a direct call of `bouncer_record_transaction`, as the store's
/// statement does but reading nothing back: for tests that write under an earlier schema, whose function returns
/// fewer columns than today's store reads (the stored facts arrived in schema/0094). Works with every definition
/// since 0008 (the 21 parameters).
func recordUnderEarlierSchema(_ pool: ConnectionPool, _ t: TransactionFacts, userId: String?, project: Project,
                              now: Date) throws {
    try pool.withConnection { c in
        _ = try c.query("""
            SELECT 1 FROM bouncer_record_transaction(\(project.id), \(t.transactionId)::text,
                \(t.originalTransactionId)::text, \(t.productId)::text, \(t.type.rawValue)::text,
                \(t.environment.rawValue)::text, \(t.bundleId ?? project.bundleId)::text,
                \(t.purchaseDate), \(Bind.date(t.originalPurchaseDate)), \(Bind.date(t.expiresDate)),
                \(Bind.date(t.accessRevocationDate)), \(Bind.int(t.revocationReason))::int,
                \(Bind.uuid(t.appAccountToken)), \(Bind.text(t.ownershipType?.rawValue))::text,
                \(t.signedDate), \(t.payloadJSON)::jsonb, \(Bind.text(userId))::text, NULL::text,
                \(project.transferPolicy.rawValue)::text, \(now), 'receipt'::text)
            """)
    }
}
