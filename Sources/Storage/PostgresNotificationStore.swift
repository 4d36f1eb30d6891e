public import Domain
public import Foundation
public import Postgres

/// App Store Server Notifications in PostgreSQL: the raw audit log plus their facts, applied exactly once.
///
/// One statement per notification, a call of `bouncer_record_notification`, run as its own database
/// transaction (`ConnectionPool.autocommit`): the `notifications` row is inserted with `ON CONFLICT DO NOTHING`,
/// and only the delivery that inserted it applies the facts — through the same functions as the receipts path
/// (`bouncer_record_transaction`, `bouncer_record_renewal`: the one author of the newer-fact-wins rules). A
/// concurrent redelivery blocks on the primary key until the first commits, then finds the row: exactly one of
/// them applies. If anything fails, nothing is stored and Apple's retry starts over.
///
/// Deduplication is per environment (project, environment, `notificationUUID`): a forged Xcode notification
/// reusing a real UUID cannot make Apple's delivery look like a redelivery. Xcode and LocalTesting notifications,
/// which anyone can sign, are capped per project (`localTestingNotificationLimit`): the oldest are deleted in
/// the same database transaction, so forgeries cannot grow the table without bound; the Xcode/LocalTesting
/// transactions they carry count towards the purchase store's cap (`xcodeTransactionLimit`).
public final class PostgresNotificationStore: PostgresStore, @unchecked Sendable, NotificationStore {
    /// The default number of Xcode/LocalTesting notification rows kept per project (newest by `received_at`).
    public static let defaultLocalTestingNotificationLimit = 1_000

    private let localTestingNotificationLimit: Int
    private let xcodeTransactionLimit: Int

    /// A store over `pool`; the pool's lifetime is the caller's. `localTestingNotificationLimit` bounds the
    /// Xcode/LocalTesting notification rows kept per project (older ones are deleted; a redelivery of a deleted
    /// one is then applied again, which is harmless: facts only win when newer); `xcodeTransactionLimit` is
    /// `PostgresPurchaseStore`'s cap of Xcode/LocalTesting transaction rows.
    public init(
        pool: ConnectionPool, localTestingNotificationLimit: Int = PostgresNotificationStore.defaultLocalTestingNotificationLimit,
        xcodeTransactionLimit: Int = PostgresPurchaseStore.defaultXcodeTransactionLimit
    ) {
        self.localTestingNotificationLimit = max(1, localTestingNotificationLimit)
        self.xcodeTransactionLimit = max(1, xcodeTransactionLimit)
        super.init(pool: pool)
    }

    /// Stores the notification and, on first delivery, applies its transaction (no user binding: users are
    /// bound by `POST /v1/receipts`, and every bound user reads the shared purchase state) and renewal info, each
    /// in its own environment's purchase. A nested transaction that conflicts with a stored one throws
    /// `.transactionConflict` and nothing, not even the notification, is stored.
    public func recordNotification(_ notification: NotificationFacts, project: Project, now: Date) throws
        -> NotificationOutcome
    {
        let limit = localTestingNotificationLimit
        let capped = notification.transaction?.environment.isLocalTesting == true
        let outcome: String? = try StorageErrors.mapping("record notification") {
            try PostgresPurchaseStore.write(pool, capping: capped ? xcodeTransactionLimit : nil,
                                            project: project) { connection -> String? in
                try Self.record(notification, project: project, now: now, source: "notification",
                                localTestingNotificationLimit: limit, on: connection)
            }
        }
        // The function answers with the outcome's own wire string (`NotificationOutcome`'s raw value).
        guard let known = outcome.flatMap(NotificationOutcome.init(rawValue:)) else {
            throw PGError(code: .decoding, message: "bouncer_record_notification: unexpected outcome \(String(describing: outcome).prefix(40))")
        }
        return known
    }

    /// One call of `bouncer_record_notification` on `connection` (its own transaction, or part of the caller's):
    /// `"processed"` or `"duplicate"`. `source` is `notification` (the webhook) or `reconcile` (recovered from
    /// Notification History); it is stored on the notification and on the transaction facts it writes.
    static func record(
        _ notification: NotificationFacts, project: Project, now: Date, source: String,
        localTestingNotificationLimit: Int, on connection: Connection
    ) throws -> String? {
        let n = notification
        // The rules that need no stored state stay here, their one author: which notifications apply their facts,
        // which environments are capped.
        let applyFacts = NotificationRules.effect(of: n) == .applyFacts
        let trimKeep = n.environment?.isLocalTesting == true ? Int64(localTestingNotificationLimit) : nil
        let t = n.transaction, r = n.renewal, a = n.appTransaction
        let rescindedAt = NotificationRules.consentRescindedAt(by: n, receivedAt: now)
        do {
            // Every parameter is cast to the function's type: text binds arrive untyped, integers as int8.
            // The app transaction (RESCIND_CONSENT and other appData notifications) is written by a
            // data-modifying CTE of the same statement — the same database transaction — and only on first
            // delivery: created when unknown (no user; Sandbox and Production only), its consent withdrawal
            // recorded once (the first wins).
            return try connection.query("""
                WITH n AS (SELECT bouncer_record_notification(\(project.id), \(n.notificationUUID), \(n.type)::text,
                    \(Bind.text(n.subtype))::text, \(Bind.text(n.originalTransactionId))::text,
                    \(Self.dedupEnvironment(n.environment))::text, \(Bind.date(n.signedDate)), \(n.payloadJSON)::jsonb,
                    \(Bind.int64(trimKeep)), \(applyFacts),
                    \(Bind.text(t?.transactionId))::text, \(Bind.text(t?.originalTransactionId))::text,
                    \(Bind.text(t?.productId))::text, \(Bind.text(t?.type.rawValue))::text,
                    \(Bind.text(t?.environment.rawValue))::text,
                    \(Bind.text(t.map { $0.bundleId ?? project.bundleId }))::text, \(Bind.date(t?.purchaseDate)),
                    \(Bind.date(t?.originalPurchaseDate)), \(Bind.date(t?.expiresDate)),
                    \(Bind.date(t?.accessRevocationDate)), \(Bind.int(t?.revocationReason))::int,
                    \(Bind.uuid(t?.appAccountToken)), \(Bind.text(t?.ownershipType?.rawValue))::text,
                    \(Bind.date(t?.signedDate)), \(Bind.text(t?.payloadJSON))::jsonb,
                    \(Bind.text(r?.originalTransactionId))::text, \(Bind.text(r?.productId))::text,
                    \(Bind.text(r?.autoRenewProductId))::text, \(Bind.int(r?.autoRenewStatus))::int,
                    \(Bind.int(r?.expirationIntent))::int, \(Bind.date(r?.gracePeriodExpiresDate)),
                    \(Bind.bool(r?.isInBillingRetryPeriod)), \(Bind.int(r?.priceIncreaseStatus))::int,
                    \(Bind.int(r?.offerType))::int, \(Bind.text(r?.offerIdentifier))::text,
                    \(Bind.date(r?.renewalDate)), \(Bind.text(r?.environment.rawValue))::text,
                    \(Bind.date(r?.signedDate)), \(Bind.text(r?.payloadJSON))::jsonb,
                    \(r?.eligibleWinBackOfferIds ?? [])::text[], \(now), \(source)::text) AS outcome
                ), app AS (
                    INSERT INTO app_transactions AS a (project_id, environment, app_transaction_id, bundle_id,
                        original_application_version, original_purchase_date, receipt_creation_date,
                        consent_rescinded_at, payload, first_seen_at, last_seen_at)
                    SELECT \(project.id), \(Bind.text(a?.environment.rawValue))::text,
                        \(Bind.text(a?.appTransactionId))::text, \(Bind.text(a?.bundleId))::text,
                        \(Bind.text(a?.originalApplicationVersion))::text, \(Bind.date(a?.originalPurchaseDate)),
                        \(Bind.date(a?.receiptCreationDate)), \(Bind.date(rescindedAt)),
                        \(Bind.text(a?.payloadJSON))::jsonb, \(now), \(now)
                    FROM n WHERE n.outcome = 'processed' AND \(Bind.text(a?.appTransactionId))::text IS NOT NULL
                      -- Xcode/LocalTesting data, which anyone can sign, only marks a row an app posted: forged
                      -- notifications are capped (trimKeep), the rows they would create would not be.
                      AND (\(a?.environment.isLocalTesting != true) OR EXISTS (
                          SELECT 1 FROM app_transactions x WHERE x.project_id = \(project.id)
                             AND x.environment = \(Bind.text(a?.environment.rawValue))::text
                             AND x.app_transaction_id = \(Bind.text(a?.appTransactionId))::text))
                    ON CONFLICT (project_id, environment, app_transaction_id) DO UPDATE SET
                        consent_rescinded_at = COALESCE(a.consent_rescinded_at, EXCLUDED.consent_rescinded_at),
                        last_seen_at = GREATEST(EXCLUDED.last_seen_at, a.last_seen_at)
                    RETURNING 1
                )
                SELECT outcome FROM n
                """).first?.decode("outcome", as: String.self)
        } catch {
            // Typed throws: `error` is a PGError.
            guard let t else { throw error }
            throw PostgresPurchaseStore.refusal(error, transaction: t, project: project)
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
                        SELECT \(unsafeSQL: Self.listColumns) FROM notifications n \(unsafeSQL: Self.consumptionJoin)
                        WHERE n.project_id = \(projectId) AND n.original_transaction_id = \(originalTransactionId)
                        ORDER BY n.received_at DESC, n.signed_date DESC NULLS LAST, n.notification_uuid DESC
                        LIMIT \(limit)
                        """)
                } else {
                    rows = try connection.query("""
                        SELECT \(unsafeSQL: Self.listColumns) FROM notifications n \(unsafeSQL: Self.consumptionJoin)
                        WHERE n.project_id = \(projectId)
                        ORDER BY n.received_at DESC, n.signed_date DESC NULLS LAST, n.notification_uuid DESC
                        LIMIT \(limit)
                        """)
                }
                return try rows.map { row in
                    var stored = StoredNotification(
                        notificationUUID: try row.decode("notification_uuid", as: UUID.self),
                        type: try row.decode("notification_type", as: String.self),
                        subtype: try row.decode("subtype", as: String?.self),
                        originalTransactionId: try row.decode("original_transaction_id", as: String?.self),
                        environment: try row.decode("environment", as: String.self)
                            .nonEmpty.map(StoreEnvironment.init(rawValue:)),
                        signedDate: try row.decode("signed_date", as: Date?.self),
                        receivedAt: try row.decode("received_at", as: Date.self),
                        processedAt: try row.decode("processed_at", as: Date?.self))
                    if let status = try row.decode("consumption_status", as: String?.self) {
                        stored.consumption = ConsumptionAnswer(
                            status: ConsumptionStatus(rawValue: status) ?? .pending,
                            attempts: try row.decode("consumption_attempts", as: Int.self),
                            lastError: try row.decode("consumption_last_error", as: String?.self),
                            sentAt: try row.decode("consumption_sent_at", as: Date?.self))
                    }
                    return stored
                }
            }
        }
    }

    private static let listColumns = """
        n.notification_uuid, n.notification_type, n.subtype, n.original_transaction_id, n.environment, n.signed_date,
        n.received_at, n.processed_at, c.status AS consumption_status, c.attempts AS consumption_attempts,
        c.last_error AS consumption_last_error, c.sent_at AS consumption_sent_at
        """

    /// A CONSUMPTION_REQUEST's answer (schema/0010), through its primary key.
    private static let consumptionJoin = """
        LEFT JOIN consumption_requests c ON c.project_id = n.project_id AND c.environment = n.environment
            AND c.notification_uuid = n.notification_uuid
        """

    /// The environment part of the dedup key: '' for a notification without one (verification requires one).
    /// The `environment` a notification is stored and deduplicated under: its own, or "" when it named none.
    static func dedupEnvironment(_ environment: StoreEnvironment?) -> String { environment?.rawValue ?? "" }
}

extension String {
    /// `nil` for the empty string.
    fileprivate var nonEmpty: String? { isEmpty ? nil : self }
}
