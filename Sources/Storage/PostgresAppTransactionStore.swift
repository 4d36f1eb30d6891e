public import Domain
public import Foundation
import Postgres

/// App transactions in PostgreSQL (`app_transactions`, schema/0009), keyed by (project, environment,
/// `appTransactionId`): an Xcode or LocalTesting id, which anyone can sign, never meets a real one.
public final class PostgresAppTransactionStore: PostgresStore, @unchecked Sendable, AppTransactionStore {
    /// One statement (its own database transaction): lock any stored row, upsert (a later `receiptCreationDate`
    /// refreshes the facts; `user_id` is replaced only when one is given; `consent_rescinded_at` is never
    /// touched), and return the row with the user it was bound to before.
    public func recordAppTransaction(_ facts: AppTransactionFacts, userId: String?, project: Project, now: Date) throws
        -> RecordedAppTransaction
    {
        let f = facts
        return try StorageErrors.mapping("record app transaction") {
            try pool.autocommit { connection in
                let rows = try connection.query("""
                    WITH previous AS (
                        SELECT user_id FROM app_transactions
                        WHERE project_id = \(project.id) AND environment = \(f.environment.rawValue)
                          AND app_transaction_id = \(f.appTransactionId)
                        FOR UPDATE
                    ), stored AS (
                        INSERT INTO app_transactions AS a (project_id, environment, app_transaction_id, bundle_id,
                            original_application_version, original_purchase_date, receipt_creation_date, user_id,
                            payload, first_seen_at, last_seen_at)
                        VALUES (\(project.id), \(f.environment.rawValue), \(f.appTransactionId), \(f.bundleId),
                            \(Bind.text(f.originalApplicationVersion))::text, \(Bind.date(f.originalPurchaseDate)),
                            \(f.receiptCreationDate), \(Bind.text(userId))::text, \(f.payloadJSON)::jsonb, \(now), \(now))
                        ON CONFLICT (project_id, environment, app_transaction_id) DO UPDATE SET
                            original_application_version = CASE WHEN EXCLUDED.receipt_creation_date > a.receipt_creation_date
                                THEN EXCLUDED.original_application_version ELSE a.original_application_version END,
                            original_purchase_date = CASE WHEN EXCLUDED.receipt_creation_date > a.receipt_creation_date
                                THEN EXCLUDED.original_purchase_date ELSE a.original_purchase_date END,
                            payload = CASE WHEN EXCLUDED.receipt_creation_date > a.receipt_creation_date
                                THEN EXCLUDED.payload ELSE a.payload END,
                            bundle_id = CASE WHEN EXCLUDED.receipt_creation_date > a.receipt_creation_date
                                THEN EXCLUDED.bundle_id ELSE a.bundle_id END,
                            receipt_creation_date = GREATEST(EXCLUDED.receipt_creation_date, a.receipt_creation_date),
                            user_id = COALESCE(EXCLUDED.user_id, a.user_id),
                            last_seen_at = GREATEST(EXCLUDED.last_seen_at, a.last_seen_at)
                        RETURNING a.environment, a.app_transaction_id, a.original_application_version,
                            a.original_purchase_date, a.consent_rescinded_at, a.user_id
                    )
                    SELECT stored.*, (SELECT user_id FROM previous) AS previous_user_id FROM stored
                    """)
                guard let row = rows.first else {
                    throw PGError(code: .decoding, message: "INSERT app_transactions returned no row")
                }
                let previous = try row.decode("previous_user_id", as: String?.self)
                let current = try row.decode("user_id", as: String?.self)
                return RecordedAppTransaction(
                    stored: try Self.stored(from: row),
                    previousUserId: previous != current ? previous : nil)
            }
        }
    }

    /// A row of `app_transactions` as the read path needs it.
    static func stored(from row: Row) throws -> StoredAppTransaction {
        StoredAppTransaction(
            appTransactionId: try row.decode("app_transaction_id", as: String.self),
            environment: StoreEnvironment(rawValue: try row.decode("environment", as: String.self)),
            originalApplicationVersion: try row.decode("original_application_version", as: String?.self),
            originalPurchaseDate: try row.decode("original_purchase_date", as: Date?.self),
            consentRescindedAt: try row.decode("consent_rescinded_at", as: Date?.self))
    }
}
