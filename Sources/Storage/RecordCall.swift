import Domain
import Foundation
import Postgres

extension PostgresPurchaseStore {
    /// One call of `bouncer_record_transaction` (schema/functions/) for `t`, bound to `userId` when given, reading
    /// nothing back: reconciliation's write (source `reconcile`, no user), and the tests that write under an earlier
    /// schema (every definition since 0008 takes these 21 parameters; the columns it returns have changed). A refusal
    /// arrives as the function's `PGError` (`refusal(_:transaction:project:)` maps it).
    static func call(recording t: TransactionFacts, userId: String?, project: Project, now: Date,
                     source: TransactionSource, on connection: Connection) throws {
        try connection.query("""
            SELECT 1 FROM bouncer_record_transaction(\(project.id), \(t.transactionId)::text,
                \(t.originalTransactionId)::text, \(t.productId)::text, \(t.type.rawValue)::text,
                \(t.environment.rawValue)::text, \(t.bundleId ?? project.bundleId)::text,
                \(t.purchaseDate), \(Bind.date(t.originalPurchaseDate)), \(Bind.date(t.expiresDate)),
                \(Bind.date(t.accessRevocationDate)), \(Bind.int(t.revocationReason))::int,
                \(Bind.uuid(t.appAccountToken)), \(Bind.text(t.ownershipType?.rawValue))::text,
                \(t.signedDate), \(t.payloadJSON)::jsonb, \(Bind.text(userId))::text, NULL::text,
                \(project.transferPolicy.rawValue)::text, \(now), \(source.rawValue)::text)
            """)
    }
}
