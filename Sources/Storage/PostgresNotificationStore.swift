import Domain
import Foundation
import Postgres

/// App Store Server Notifications in PostgreSQL: the raw audit log plus their facts, applied exactly once.
///
/// One database transaction per notification: the `notifications` row is inserted with `ON CONFLICT DO
/// NOTHING`, and only the delivery that inserted it applies the facts — through the same calls as the receipts
/// path (`PostgresPurchaseStore.apply`: schema/0006's functions, the one author of the newer-fact-wins rules).
/// A notification with a transaction and renewal info costs five round trips: BEGIN, the audit row, the two
/// calls, COMMIT.
/// A concurrent redelivery blocks on the primary key until the first commits, then finds the row: exactly
/// one of them applies. If anything fails, nothing is stored and Apple's retry starts over.
///
/// Deduplication is per environment (project, environment, `notificationUUID`): a forged Xcode notification
/// reusing a real UUID cannot make Apple's delivery look like a redelivery. Xcode and LocalTesting notifications,
/// which anyone can sign, are capped per project (`localTestingNotificationLimit`): the oldest are deleted in
/// the same database transaction, so forgeries cannot grow the table without bound.
public final class PostgresNotificationStore: NotificationStore {
    /// The default number of Xcode/LocalTesting notification rows kept per project (newest by `received_at`).
    public static let defaultLocalTestingNotificationLimit = 1_000

    private let pool: ConnectionPool
    private let localTestingNotificationLimit: Int

    /// A store over `pool`; the pool's lifetime is the caller's. `localTestingNotificationLimit` bounds the
    /// Xcode/LocalTesting notification rows kept per project (older ones are deleted; a redelivery of a deleted
    /// one is then applied again, which is harmless: facts only win when newer).
    public init(
        pool: ConnectionPool, localTestingNotificationLimit: Int = PostgresNotificationStore.defaultLocalTestingNotificationLimit
    ) {
        self.pool = pool
        self.localTestingNotificationLimit = max(1, localTestingNotificationLimit)
    }

    /// Stores the notification and, on first delivery, applies its transaction (no user binding: users are
    /// bound by `POST /v1/receipts`, and every bound user reads the shared purchase state) and renewal info, each
    /// in its own environment's purchase. A nested transaction that conflicts with a stored one throws
    /// `.transactionConflict` and nothing, not even the notification, is stored.
    public func recordNotification(_ notification: NotificationFacts, project: Project, now: Date) throws
        -> NotificationOutcome
    {
        try StorageErrors.mapping("record notification") {
            try pool.transaction { connection in
                guard try Self.insert(notification, projectId: project.id, now: now, on: connection) else {
                    return .duplicate
                }
                if notification.environment?.isLocalTesting == true {
                    try Self.trimLocalTesting(projectId: project.id, keep: localTestingNotificationLimit, on: connection)
                }
                if NotificationRules.effect(of: notification) == .applyFacts {
                    // Transaction first: it may create the purchase (adopting pending renewal info), so the
                    // renewal info that follows finds the row instead of waiting in pending_renewals.
                    if let transaction = notification.transaction {
                        _ = try PostgresPurchaseStore.apply(
                            transaction, userId: nil, deviceId: nil, project: project, now: now, on: connection)
                    }
                    if let renewal = notification.renewal {
                        _ = try PostgresPurchaseStore.apply(renewal, projectId: project.id, now: now, on: connection)
                    }
                }
                return .processed
            }
        }
    }

    /// Newest first by `received_at` (then Apple's `signed_date`, then the UUID, so the order is total).
    public func notifications(projectId: UUID, originalTransactionId: String?, limit: Int) throws
        -> [StoredNotification]
    {
        let limit = Int64(max(0, limit))
        return try StorageErrors.mapping("list notifications") {
            try pool.withConnection { connection in
                let rows: Rows
                if let originalTransactionId {
                    rows = try connection.query("""
                        SELECT \(unsafeSQL: Self.listColumns) FROM notifications
                        WHERE project_id = \(projectId) AND original_transaction_id = \(originalTransactionId)
                        ORDER BY received_at DESC, signed_date DESC NULLS LAST, notification_uuid DESC
                        LIMIT \(limit)
                        """)
                } else {
                    rows = try connection.query("""
                        SELECT \(unsafeSQL: Self.listColumns) FROM notifications
                        WHERE project_id = \(projectId)
                        ORDER BY received_at DESC, signed_date DESC NULLS LAST, notification_uuid DESC
                        LIMIT \(limit)
                        """)
                }
                return try rows.map { row in
                    StoredNotification(
                        notificationUUID: try row.decode("notification_uuid", as: UUID.self),
                        type: try row.decode("notification_type", as: String.self),
                        subtype: try row.decode("subtype", as: String?.self),
                        originalTransactionId: try row.decode("original_transaction_id", as: String?.self),
                        environment: try row.decode("environment", as: String.self)
                            .nonEmpty.map(StoreEnvironment.init(rawValue:)),
                        signedDate: try row.decode("signed_date", as: Date?.self),
                        receivedAt: try row.decode("received_at", as: Date.self),
                        processedAt: try row.decode("processed_at", as: Date?.self))
                }
            }
        }
    }

    private static let listColumns = """
        notification_uuid, notification_type, subtype, original_transaction_id, environment, signed_date,
        received_at, processed_at
        """

    /// The environment part of the dedup key: '' for a notification without one (verification requires one).
    private static func dedupEnvironment(_ n: NotificationFacts) -> String { n.environment?.rawValue ?? "" }

    /// Inserts the audit row; true when this delivery is the first (the row was not there). It is stamped
    /// `processed_at` right away: the facts are applied in the same database transaction, so the row is only ever
    /// seen processed.
    private static func insert(
        _ n: NotificationFacts, projectId: UUID, now: Date, on connection: Connection
    ) throws -> Bool {
        let rows = try connection.query("""
            INSERT INTO notifications (project_id, notification_uuid, notification_type, subtype,
                original_transaction_id, environment, signed_date, payload, received_at, processed_at)
            VALUES (\(projectId), \(n.notificationUUID), \(n.type), \(Bind.text(n.subtype)),
                \(Bind.text(n.originalTransactionId)), \(dedupEnvironment(n)),
                \(Bind.date(n.signedDate)), \(n.payloadJSON), \(now), \(now))
            ON CONFLICT (project_id, environment, notification_uuid) DO NOTHING
            RETURNING notification_uuid
            """)
        return !rows.isEmpty
    }

    /// Deletes the project's Xcode/LocalTesting notifications beyond the newest `keep`. Both sides of the join
    /// go through the primary key's (project_id, environment) prefix, so it reads at most `keep` + 1 rows and
    /// never the project's real notifications (about 2.5 ms at the default cap, measured on a loaded machine).
    private static func trimLocalTesting(projectId: UUID, keep: Int, on connection: Connection) throws {
        try connection.execute("""
            DELETE FROM notifications n USING (
                SELECT environment, notification_uuid FROM notifications
                WHERE project_id = \(projectId) AND environment IN ('Xcode', 'LocalTesting')
                ORDER BY received_at DESC, notification_uuid DESC
                OFFSET \(Int64(keep))) old
            WHERE n.project_id = \(projectId) AND n.environment IN ('Xcode', 'LocalTesting')
              AND n.environment = old.environment AND n.notification_uuid = old.notification_uuid
            """)
    }
}

extension String {
    /// `nil` for the empty string.
    fileprivate var nonEmpty: String? { isEmpty ? nil : self }
}
