public import Domain
public import Foundation
import JSON
public import Postgres

/// Reconciliation's runs, changes, check times and catch-up cursors in PostgreSQL (schema/0008), and the writes of
/// what it verified, through the same record functions as every other source.
///
/// One run per project at a time across every instance: `withProjectLock` holds a session advisory lock on a
/// connection of its own for the whole run (released at the end, or by PostgreSQL when that connection dies).
/// Each fact is applied in one database transaction that also reads the purchase before and after and records the
/// change (`reconcile_changes`), so the change log is exactly what the write did.
public final class PostgresReconciliationStore: PostgresStore, @unchecked Sendable, ReconciliationStore {
    /// The advisory lock class of reconciliation (0006's hand-over lock is 16978).
    static let lockClass: Int32 = 16979

    private let localTestingNotificationLimit: Int

    /// A store over `pool` (which must have a connection to spare for the lock while a run writes).
    public init(pool: ConnectionPool,
                localTestingNotificationLimit: Int = PostgresNotificationStore.defaultLocalTestingNotificationLimit) {
        self.localTestingNotificationLimit = max(1, localTestingNotificationLimit)
        super.init(pool: pool)
    }

    public func withProjectLock<T>(projectId: UUID, _ body: () throws -> T) throws -> T? {
        let key = projectId.lowercasedText
        return try StorageErrors.mapping("reconcile lock") {
            try pool.withConnection { connection -> T? in
                let locked = try connection.query(
                    "SELECT pg_try_advisory_lock(\(Self.lockClass)::int, hashtext(\(key)::text)) AS locked"
                ).first?.decode("locked", as: Bool.self) ?? false
                guard locked else { return nil }
                // If the unlock fails the connection is broken, and PostgreSQL released the lock with the session.
                defer { _ = try? connection.query("SELECT pg_advisory_unlock(\(Self.lockClass)::int, hashtext(\(key)::text))") }
                return try body()
            }
        }
    }

    public func projectsWithCredentials() throws -> [UUID] {
        try StorageErrors.mapping("reconcile projects") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT c.project_id FROM app_store_credentials c JOIN projects p ON p.id = c.project_id
                    ORDER BY p.created_at, p.id
                    """).map { try $0.decode("project_id", as: UUID.self) }
            }
        }
    }

    public func lastRunStart(projectId: UUID, trigger: ReconcileTrigger) throws -> Date? {
        try StorageErrors.mapping("reconcile last run") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT max(started_at) AS started_at FROM reconcile_runs
                    WHERE project_id = \(projectId) AND trigger = \(trigger.rawValue)
                    """).first?.decode("started_at", as: Date?.self)
            }
        }
    }

    public func startRun(projectId: UUID, trigger: ReconcileTrigger, instance: String, at: Date) throws -> Int64 {
        let id: Int64? = try StorageErrors.mapping("reconcile start run") {
            try pool.autocommit { connection in
                try connection.query("""
                    INSERT INTO reconcile_runs (project_id, trigger, started_at, instance)
                    VALUES (\(projectId), \(trigger.rawValue), \(at), \(String(instance.prefix(200))))
                    RETURNING id
                    """).first?.decode("id", as: Int64.self)
            }
        }
        guard let id else { throw PGError(code: .decoding, message: "reconcile_runs insert returned no id") }
        return id
    }

    public func finishRun(_ report: ReconcileReport) throws {
        let errors = Self.errorsJSON(report.errors)
        _ = try StorageErrors.mapping("reconcile finish run") {
            try pool.transaction { connection in
                let updated = try connection.execute("""
                    UPDATE reconcile_runs SET finished_at = \(Bind.date(report.finishedAt)),
                        outcome = \(report.outcome.rawValue), checked = \(Int64(report.checked))::int,
                        changed = \(Int64(report.changed))::int,
                        notifications_applied = \(Int64(report.notificationsApplied))::int,
                        refunds_found = \(Int64(report.refundsFound))::int,
                        skipped = \(Int64(report.skipped))::int, apple_calls = \(Int64(report.appleCalls))::int,
                        errors = \(errors)::jsonb
                    WHERE project_id = \(report.projectId) AND id = \(report.runId)
                    """)
                // An admin's run is audited when it finishes (a failed run answers an error, and leaves no entry).
                if updated > 0, report.outcome != .failed {
                    try AuditRows.write(connection, target: "reconcile_run:\(report.runId)", changes: [
                        AuditChange("outcome", .null, .string(report.outcome.rawValue)),
                        AuditChange("checked", .null, .int(report.checked)),
                        AuditChange("changed", .null, .int(report.changed)),
                        AuditChange("notifications_applied", .null, .int(report.notificationsApplied)),
                        AuditChange("refunds_found", .null, .int(report.refundsFound)),
                    ])
                }
                return updated
            }
        }
    }

    public func subscriptionsToCheck(projectId: UUID, environments: [StoreEnvironment], expiredSince: Date,
                                     limit: Int) throws -> (candidates: [ReconcileCandidate], total: Int) {
        let names = environments.map(\.rawValue)
        let type = ProductType.autoRenewable.rawValue
        return try StorageErrors.mapping("reconcile subscriptions") {
            try pool.withConnection { connection in
                // Revoked and not reversed within the window, or expired (period and grace) before it: done.
                let total = try connection.query("""
                    SELECT count(*) AS total FROM purchases p
                    WHERE p.project_id = \(projectId) AND p.environment = ANY(\(names)) AND p.type = \(type)
                      AND (p.revocation_date IS NULL OR p.revocation_date > \(expiredSince))
                      AND (p.expires_date IS NULL OR p.expires_date > \(expiredSince)
                           OR p.grace_period_expires_date > \(expiredSince))
                    """).first?.decode("total", as: Int64.self) ?? 0
                let rows = try connection.query("""
                    SELECT p.environment, p.original_transaction_id, p.latest_transaction_id, p.type
                    FROM purchases p
                    LEFT JOIN reconcile_checks c ON c.project_id = p.project_id AND c.environment = p.environment
                        AND c.original_transaction_id = p.original_transaction_id
                    WHERE p.project_id = \(projectId) AND p.environment = ANY(\(names)) AND p.type = \(type)
                      AND (p.revocation_date IS NULL OR p.revocation_date > \(expiredSince))
                      AND (p.expires_date IS NULL OR p.expires_date > \(expiredSince)
                           OR p.grace_period_expires_date > \(expiredSince))
                    ORDER BY c.checked_at ASC NULLS FIRST, p.original_transaction_id COLLATE "C", p.environment
                    LIMIT \(Int64(max(0, limit)))
                    """)
                return (try rows.map(Self.candidate), Int(total))
            }
        }
    }

    public func purchasesToCheck(projectId: UUID, environments: [StoreEnvironment], limit: Int) throws
        -> (candidates: [ReconcileCandidate], total: Int)
    {
        let names = environments.map(\.rawValue)
        let types = [ProductType.nonConsumable.rawValue, ProductType.nonRenewing.rawValue]
        return try StorageErrors.mapping("reconcile purchases") {
            try pool.withConnection { connection in
                let total = try connection.query("""
                    SELECT count(*) AS total FROM purchases p
                    WHERE p.project_id = \(projectId) AND p.environment = ANY(\(names)) AND p.type = ANY(\(types))
                      AND p.revocation_date IS NULL
                    """).first?.decode("total", as: Int64.self) ?? 0
                let rows = try connection.query("""
                    SELECT p.environment, p.original_transaction_id, p.latest_transaction_id, p.type
                    FROM purchases p
                    LEFT JOIN reconcile_checks c ON c.project_id = p.project_id AND c.environment = p.environment
                        AND c.original_transaction_id = p.original_transaction_id
                    WHERE p.project_id = \(projectId) AND p.environment = ANY(\(names)) AND p.type = ANY(\(types))
                      AND p.revocation_date IS NULL
                    ORDER BY c.checked_at ASC NULLS FIRST, p.original_transaction_id COLLATE "C", p.environment
                    LIMIT \(Int64(max(0, limit)))
                    """)
                return (try rows.map(Self.candidate), Int(total))
            }
        }
    }

    public func markChecked(projectId: UUID, environment: StoreEnvironment, originalTransactionId: String, at: Date)
        throws
    {
        _ = try StorageErrors.mapping("reconcile mark checked") {
            try pool.autocommit { connection in
                try connection.execute("""
                    INSERT INTO reconcile_checks (project_id, environment, original_transaction_id, checked_at)
                    SELECT p.project_id, p.environment, p.original_transaction_id, \(at) FROM purchases p
                    WHERE p.project_id = \(projectId) AND p.environment = \(environment.rawValue)
                      AND p.original_transaction_id = \(originalTransactionId)
                    ON CONFLICT (project_id, environment, original_transaction_id)
                    DO UPDATE SET checked_at = EXCLUDED.checked_at
                    """)
            }
        }
    }

    public func applyChecked(transaction: TransactionFacts, renewal: RenewalFacts?, via: ReconcileVia,
                             project: Project, runId: Int64, now: Date) throws -> ReconcileApplied
    {
        let t = transaction
        return try StorageErrors.mapping("reconcile apply") {
            try pool.transaction { connection -> ReconcileApplied in
                let before = try Self.purchase(project.id, t.environment, t.originalTransactionId, on: connection)
                let wasRevoked = try Self.isRevoked(project.id, t, on: connection)
                do {
                    // bouncer_record_transaction (schema/functions/) with p_source 'reconcile' and no user.
                    try PostgresPurchaseStore.call(recording: t, userId: nil, project: project, now: now,
                                                   source: .reconcile, on: connection)
                } catch let error as PGError {
                    throw PostgresPurchaseStore.refusal(error, transaction: t, project: project)
                }
                if let r = renewal {
                    try connection.query("""
                        SELECT 1 FROM bouncer_record_renewal(\(project.id), \(r.originalTransactionId)::text,
                            \(Bind.text(r.productId))::text, \(Bind.text(r.autoRenewProductId))::text,
                            \(Bind.int(r.autoRenewStatus))::int, \(Bind.int(r.expirationIntent))::int,
                            \(Bind.date(r.gracePeriodExpiresDate)), \(Bind.bool(r.isInBillingRetryPeriod)),
                            \(Bind.int(r.priceIncreaseStatus))::int, \(Bind.int(r.offerType))::int,
                            \(Bind.text(r.offerIdentifier))::text, \(Bind.date(r.renewalDate)),
                            \(r.environment.rawValue)::text, \(r.signedDate), \(r.payloadJSON)::jsonb,
                            \(r.eligibleWinBackOfferIds)::text[], \(now))
                        """)
                }
                let isRevoked = try Self.isRevoked(project.id, t, on: connection)
                let newRefund = !wasRevoked && isRevoked
                guard let after = try Self.purchase(project.id, t.environment, t.originalTransactionId, on: connection),
                      let change = ReconcileChange.between(before, after, runId: runId, via: via, at: now)
                else { return ReconcileApplied(change: nil, newRefund: newRefund) }
                try Self.insert(change, projectId: project.id, on: connection)
                return ReconcileApplied(change: change, newRefund: newRefund)
            }
        }
    }

    public func refundHistoryCustomers(projectId: UUID, environments: [StoreEnvironment], limit: Int) throws
        -> [RefundHistoryCustomer]
    {
        let names = environments.map(\.rawValue)
        return try StorageErrors.mapping("reconcile refund customers") {
            try pool.withConnection { connection in
                // One row per Apple account (an appTransactionId, else the purchase alone), asked about through its
                // most recent purchase's latest transaction.
                try connection.query("""
                    SELECT c.environment, c.customer, c.transaction_id, r.revision FROM (
                        SELECT DISTINCT ON (k.environment, k.customer) k.environment, k.customer, k.transaction_id
                        FROM (
                            SELECT p.environment, p.latest_transaction_id AS transaction_id, p.purchase_date,
                                p.original_transaction_id,
                                CASE WHEN t.app_transaction_id IS NOT NULL THEN 'app:' || t.app_transaction_id
                                     ELSE 'purchase:' || p.original_transaction_id END AS customer
                            FROM purchases p
                            LEFT JOIN transactions t ON t.project_id = p.project_id AND t.environment = p.environment
                                AND t.transaction_id = p.latest_transaction_id
                            WHERE p.project_id = \(projectId) AND p.environment = ANY(\(names))
                        ) k
                        ORDER BY k.environment, k.customer, k.purchase_date DESC NULLS LAST,
                            k.original_transaction_id COLLATE "C"
                    ) c
                    LEFT JOIN reconcile_refund_revisions r ON r.project_id = \(projectId)
                        AND r.environment = c.environment AND r.customer = c.customer
                    ORDER BY r.read_at ASC NULLS FIRST, c.customer COLLATE "C", c.environment
                    LIMIT \(Int64(max(0, limit)))
                    """).map { row in
                    RefundHistoryCustomer(
                        environment: StoreEnvironment(rawValue: try row.decode("environment", as: String.self)),
                        key: try row.decode("customer", as: String.self),
                        transactionId: try row.decode("transaction_id", as: String.self),
                        revision: try row.decode("revision", as: String?.self))
                }
            }
        }
    }

    public func setRefundRevision(projectId: UUID, customer: RefundHistoryCustomer, revision: String?, at: Date) throws {
        _ = try StorageErrors.mapping("reconcile refund revision") {
            try pool.autocommit { connection in
                try connection.execute("""
                    INSERT INTO reconcile_refund_revisions (project_id, environment, customer, revision, read_at)
                    VALUES (\(projectId), \(customer.environment.rawValue), \(customer.key), \(Bind.text(revision))::text,
                        \(at))
                    ON CONFLICT (project_id, environment, customer)
                    DO UPDATE SET revision = EXCLUDED.revision, read_at = EXCLUDED.read_at
                    """)
            }
        }
    }

    public func applyRecovered(_ notification: NotificationFacts, project: Project, runId: Int64, now: Date) throws
        -> (outcome: NotificationOutcome, change: ReconcileChange?)
    {
        let limit = localTestingNotificationLimit
        return try StorageErrors.mapping("reconcile apply notification") {
            try pool.transaction { connection -> (outcome: NotificationOutcome, change: ReconcileChange?) in
                let key = notification.transaction.map { ($0.environment, $0.originalTransactionId) }
                    ?? notification.renewal.map { ($0.environment, $0.originalTransactionId) }
                let before = try key.flatMap { try Self.purchase(project.id, $0.0, $0.1, on: connection) }
                let outcome = try PostgresNotificationStore.record(
                    notification, project: project, now: now, source: "reconcile",
                    localTestingNotificationLimit: limit, on: connection)
                guard outcome == "processed" else {
                    guard outcome == "duplicate" else {
                        throw PGError(code: .decoding, message: "bouncer_record_notification: unexpected outcome")
                    }
                    return (.duplicate, nil)
                }
                guard let key, let after = try Self.purchase(project.id, key.0, key.1, on: connection),
                      let change = ReconcileChange.between(before, after, runId: runId, via: .notificationHistory,
                                                           notification: notification, at: now)
                else { return (.processed, nil) }
                try Self.insert(change, projectId: project.id, on: connection)
                return (.processed, change)
            }
        }
    }

    public func catchUpCursor(projectId: UUID, environment: StoreEnvironment) throws -> Date? {
        try StorageErrors.mapping("reconcile cursor") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT last_catch_up_at FROM reconcile_cursors
                    WHERE project_id = \(projectId) AND environment = \(environment.rawValue)
                    """).first?.decode("last_catch_up_at", as: Date.self)
            }
        }
    }

    public func setCatchUpCursor(projectId: UUID, environment: StoreEnvironment, to: Date, now: Date) throws {
        _ = try StorageErrors.mapping("reconcile set cursor") {
            try pool.autocommit { connection in
                // Never backwards: a slower run that started earlier must not undo a later one's progress.
                try connection.execute("""
                    INSERT INTO reconcile_cursors (project_id, environment, last_catch_up_at, updated_at)
                    VALUES (\(projectId), \(environment.rawValue), \(to), \(now))
                    ON CONFLICT (project_id, environment) DO UPDATE SET
                        last_catch_up_at = GREATEST(reconcile_cursors.last_catch_up_at, EXCLUDED.last_catch_up_at),
                        updated_at = EXCLUDED.updated_at
                    """)
            }
        }
    }

    public func runs(projectId: UUID, limit: Int, changesPerRun: Int) throws -> [ReconcileReport] {
        try StorageErrors.mapping("reconcile runs") {
            try pool.withConnection { connection in
                var reports = try connection.query("""
                    SELECT id, trigger, started_at, finished_at, outcome, checked, changed, notifications_applied,
                        refunds_found, skipped, apple_calls, errors::text AS errors
                    FROM reconcile_runs WHERE project_id = \(projectId)
                    ORDER BY started_at DESC, id DESC LIMIT \(Int64(max(0, limit)))
                    """).map { row -> ReconcileReport in
                    var report = ReconcileReport(
                        runId: try row.decode("id", as: Int64.self), projectId: projectId,
                        trigger: ReconcileTrigger(rawValue: try row.decode("trigger", as: String.self)) ?? .schedule,
                        startedAt: try row.decode("started_at", as: Date.self),
                        finishedAt: try row.decode("finished_at", as: Date?.self),
                        outcome: ReconcileOutcome(rawValue: try row.decode("outcome", as: String.self)) ?? .failed)
                    report.checked = try row.decode("checked", as: Int.self)
                    report.changed = try row.decode("changed", as: Int.self)
                    report.notificationsApplied = try row.decode("notifications_applied", as: Int.self)
                    report.refundsFound = try row.decode("refunds_found", as: Int.self)
                    report.skipped = try row.decode("skipped", as: Int.self)
                    report.appleCalls = try row.decode("apple_calls", as: Int.self)
                    report.errors = Self.errors(fromJSON: try row.decode("errors", as: String.self))
                    report.errorCount = report.errors.count
                    return report
                }
                for i in reports.indices {
                    reports[i].changes = try connection.query("""
                        SELECT run_id, environment, original_transaction_id, via, notification_uuid,
                            notification_type, latest_transaction_id, before_status, after_status,
                            before_expires_date, after_expires_date, before_revocation_date, after_revocation_date, at
                        FROM reconcile_changes WHERE project_id = \(projectId) AND run_id = \(reports[i].runId)
                        ORDER BY id LIMIT \(Int64(max(0, changesPerRun)))
                        """).map(Self.change)
                }
                return reports
            }
        }
    }

    // MARK: - Rows

    private static func candidate(_ row: Row) throws -> ReconcileCandidate {
        ReconcileCandidate(
            environment: StoreEnvironment(rawValue: try row.decode("environment", as: String.self)),
            originalTransactionId: try row.decode("original_transaction_id", as: String.self),
            latestTransactionId: try row.decode("latest_transaction_id", as: String.self),
            type: ProductType(rawValue: try row.decode("type", as: String.self)))
    }

    private static func change(_ row: Row) throws -> ReconcileChange {
        ReconcileChange(
            runId: try row.decode("run_id", as: Int64.self),
            environment: StoreEnvironment(rawValue: try row.decode("environment", as: String.self)),
            originalTransactionId: try row.decode("original_transaction_id", as: String.self),
            via: ReconcileVia(rawValue: try row.decode("via", as: String.self)) ?? .subscriptionStatus,
            notificationUUID: try row.decode("notification_uuid", as: UUID?.self),
            notificationType: try row.decode("notification_type", as: String?.self),
            latestTransactionId: try row.decode("latest_transaction_id", as: String.self),
            beforeStatus: try row.decode("before_status", as: String?.self).flatMap(EntitlementStatus.init(rawValue:)),
            afterStatus: EntitlementStatus(rawValue: try row.decode("after_status", as: String.self)) ?? .none,
            beforeExpiresDate: try row.decode("before_expires_date", as: Date?.self),
            afterExpiresDate: try row.decode("after_expires_date", as: Date?.self),
            beforeRevocationDate: try row.decode("before_revocation_date", as: Date?.self),
            afterRevocationDate: try row.decode("after_revocation_date", as: Date?.self),
            at: try row.decode("at", as: Date.self))
    }

    private static func purchase(_ projectId: UUID, _ environment: StoreEnvironment, _ originalTransactionId: String,
                                 on connection: Connection) throws -> PurchaseState? {
        try connection.query("""
            SELECT \(unsafeSQL: PurchaseRows.columns) FROM purchases p
            WHERE p.project_id = \(projectId) AND p.environment = \(environment.rawValue)
              AND p.original_transaction_id = \(originalTransactionId)
            """).first.map(PurchaseRows.state)
    }

    /// Whether the stored transaction is revoked (`false` when it is not stored).
    private static func isRevoked(_ projectId: UUID, _ t: TransactionFacts, on connection: Connection) throws -> Bool {
        try connection.query("""
            SELECT revocation_date IS NOT NULL AS revoked FROM transactions
            WHERE project_id = \(projectId) AND environment = \(t.environment.rawValue)
              AND transaction_id = \(t.transactionId)
            """).first?.decode("revoked", as: Bool.self) ?? false
    }

    private static func insert(_ c: ReconcileChange, projectId: UUID, on connection: Connection) throws {
        try connection.execute("""
            INSERT INTO reconcile_changes (project_id, run_id, environment, original_transaction_id, via,
                notification_uuid, notification_type, latest_transaction_id, before_status, after_status,
                before_expires_date, after_expires_date, before_revocation_date, after_revocation_date, at)
            VALUES (\(projectId), \(c.runId), \(c.environment.rawValue), \(c.originalTransactionId), \(c.via.rawValue),
                \(Bind.uuid(c.notificationUUID)), \(Bind.text(c.notificationType))::text, \(c.latestTransactionId),
                \(Bind.text(c.beforeStatus?.rawValue))::text, \(c.afterStatus.rawValue),
                \(Bind.date(c.beforeExpiresDate)), \(Bind.date(c.afterExpiresDate)),
                \(Bind.date(c.beforeRevocationDate)), \(Bind.date(c.afterRevocationDate)), \(c.at))
            """)
    }

    /// The run's problems as a JSON array (stage, environment, original_transaction_id, message).
    static func errorsJSON(_ problems: [ReconcileProblem]) -> String {
        var out = "["
        for (i, p) in problems.enumerated() {
            if i > 0 { out += "," }
            out += "{\"stage\":\(jsonString(p.stage)),\"environment\":"
                + (p.environment.map { jsonString($0.rawValue) } ?? "null") + ",\"original_transaction_id\":"
                + (p.originalTransactionId.map(jsonString) ?? "null") + ",\"message\":\(jsonString(p.message))}"
        }
        return out + "]"
    }

    /// Reads back what `errorsJSON` wrote (through PostgreSQL's own JSON, so only the four known keys).
    static func errors(fromJSON text: String) -> [ReconcileProblem] {
        guard let data = text.data(using: .utf8),
              let array = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]] else { return [] }
        return array.map { object in
            ReconcileProblem(
                stage: object["stage"] as? String ?? "",
                environment: (object["environment"] as? String).map(StoreEnvironment.init(rawValue:)),
                originalTransactionId: object["original_transaction_id"] as? String,
                message: object["message"] as? String ?? "")
        }
    }

    /// `s` as a quoted JSON string, escaped by the JSON module's writer (the one JSON string escaper).
    private static func jsonString(_ s: String) -> String {
        var writer = JSONWriter(reservingCapacity: s.utf8.count + 2)
        writer.writeString(s)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
