public import Domain
public import Foundation
import Postgres

/// The CONSUMPTION_REQUEST queue (schema/0010's `consumption_requests`, written by a trigger with each
/// notification), leased as `LeasedQueue` says: a responder that dies mid-call leaves the row to be claimed again.
public final class PostgresConsumptionQueue: PostgresStore, @unchecked Sendable, ConsumptionQueue {
    private static let queue = LeasedQueue(
        table: "consumption_requests", key: "notification_uuid",
        dueColumns: ", t.type, t.purchase_date, t.expires_date",
        join: """
            LEFT JOIN transactions t ON t.project_id = q.project_id AND t.environment = q.environment
                AND t.transaction_id = q.transaction_id
            """,
        returning: """
            q.notification_uuid, q.transaction_id, q.original_transaction_id, q.requested_at, q.deadline,
            due.type, due.purchase_date, due.expires_date
            """)

    /// Claims due rows oldest-due first, each with the transaction's stored type and dates (for
    /// `consumptionPercentage`).
    public func claimDue(now: Date, leaseSeconds: Int, limit: Int) throws -> [ConsumptionRequest] {
        try Self.queue.claim("claim consumption requests", on: self, now: now, leaseSeconds: leaseSeconds,
                             limit: limit) { claimed in
            let row = claimed.row
            return ConsumptionRequest(
                projectId: claimed.projectId, environment: claimed.environment,
                notificationUUID: try row.decode("notification_uuid", as: UUID.self),
                transactionId: try row.decode("transaction_id", as: String?.self),
                originalTransactionId: try row.decode("original_transaction_id", as: String?.self),
                requestedAt: try row.decode("requested_at", as: Date.self),
                deadline: try row.decode("deadline", as: Date.self),
                attempts: claimed.attempts, leaseToken: claimed.token,
                productType: try row.decode("type", as: String?.self),
                purchaseDate: try row.decode("purchase_date", as: Date?.self),
                expiresDate: try row.decode("expires_date", as: Date?.self))
        }
    }

    /// Writes the outcome while the claim's token still holds the row; releases the lease.
    public func complete(_ request: ConsumptionRequest, outcome: ConsumptionOutcome, now: Date) throws -> Bool {
        let status = outcome.status.rawValue
        let written: LeasedQueue.Outcome
        var sentAt: Date?
        var body: ConsumptionInformation?
        switch outcome {
        case .sent(let information):
            sentAt = now
            body = information
            written = .init(status: status, nextAttempt: now)
        case .skipped(_, let reason), .expired(let reason), .failed(let reason):
            written = .init(status: status, nextAttempt: now, reason: reason)
        case .rejected(let reason, let code):
            written = .init(status: status, nextAttempt: now, reason: reason, appleCode: code)
        case .retry(let at, let reason):
            written = .retry(at: at, reason: reason)
        }
        let row = LeasedQueue.Claimed(projectId: request.projectId, environment: request.environment.rawValue,
                                      key: request.notificationUUID, token: request.leaseToken)
        // The body only when one was sent (not `CASE WHEN sent THEN … ELSE request_body END`: Citus refuses a
        // non-IMMUTABLE function such as jsonb_build_object inside CASE in an UPDATE).
        let sentBody: Fragment = body.map { body in """
            request_body = jsonb_strip_nulls(jsonb_build_object(
                'customerConsented', true, 'deliveryStatus', \(body.deliveryStatus)::text,
                'consumptionPercentage', \(Bind.int(body.consumptionPercentage))::int,
                'sampleContentProvided', \(Bind.bool(body.sampleContentProvided)),
                'refundPreference', \(Bind.text(body.refundPreference))::text)),
            """ } ?? ""
        return try Self.queue.complete("complete consumption request", on: pool, row, written, now: now, columns: """
            sent_at = \(Bind.date(sentAt)), \(sentBody)
            """)
    }
}

/// The operator helpers' storage: notification arrival, purchase environments, renewal extension records.
public final class PostgresAppStoreActionStore: PostgresStore, @unchecked Sendable, AppStoreActionStore {
    /// `received_at` of that UUID in `environment` of the project (one primary-key probe: a notification is stored
    /// under its own environment, "" when it named none — `PostgresNotificationStore.dedupEnvironment`).
    public func notificationReceivedAt(projectId: UUID, environment: StoreEnvironment?,
                                       notificationUUID: UUID) throws -> Date? {
        try StorageErrors.mapping("notification received") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT received_at FROM notifications
                    WHERE project_id = \(projectId)
                      AND environment = \(PostgresNotificationStore.dedupEnvironment(environment))::text
                      AND notification_uuid = \(notificationUUID)
                    """).first?.decode("received_at", as: Date.self)
            }
        }
    }

    /// The environments of the project's purchases with that original transaction id.
    public func purchaseEnvironments(projectId: UUID, originalTransactionId: String) throws -> [StoreEnvironment] {
        try StorageErrors.mapping("purchase environments") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT environment FROM purchases
                    WHERE project_id = \(projectId) AND original_transaction_id = \(originalTransactionId)
                    ORDER BY environment
                    """).map { StoreEnvironment(rawValue: try $0.decode("environment", as: String.self)) }
            }
        }
    }

    /// Inserts the record before Apple is asked.
    public func startRenewalExtension(_ r: RenewalExtensionRecord) throws {
        try StorageErrors.mapping("start renewal extension") {
            try pool.autocommit { connection in
                _ = try connection.execute("""
                    INSERT INTO renewal_extensions (project_id, request_identifier, environment, original_transaction_id,
                        extend_by_days, reason_code, created_at)
                    VALUES (\(r.projectId), \(r.requestIdentifier), \(r.environment.rawValue), \(r.originalTransactionId),
                        \(r.extendByDays), \(r.reasonCode), \(r.createdAt))
                    """)
            }
        }
    }

    /// Writes Apple's answer (or the failure) into the record; an answer (no `error`) is the admin's change, audited
    /// in this transaction.
    public func completeRenewalExtension(_ r: RenewalExtensionRecord) throws {
        try StorageErrors.mapping("complete renewal extension") {
            try pool.transaction { connection in
                let updated = try connection.execute("""
                    UPDATE renewal_extensions SET success = \(Bind.bool(r.success)),
                        effective_date = \(Bind.date(r.effectiveDate)),
                        web_order_line_item_id = \(Bind.text(r.webOrderLineItemId))::text,
                        apple_error_code = \(Bind.int(r.appleErrorCode))::int,
                        error = \(Bind.text(r.error.map { String($0.prefix(1000)) }))::text,
                        completed_at = \(Bind.date(r.completedAt))
                    WHERE project_id = \(r.projectId) AND request_identifier = \(r.requestIdentifier)
                    """)
                if updated > 0, r.error == nil {
                    try AuditRows.write(connection, changes: [
                        AuditChange("environment", .null, .string(r.environment.rawValue)),
                        AuditChange("extend_by_days", .null, .int(r.extendByDays)),
                        AuditChange("reason_code", .null, .int(r.reasonCode)),
                        AuditChange("success", .null, r.success.map { .bool($0) } ?? .null),
                        AuditChange("effective_date", .null, .date(r.effectiveDate)),
                    ])
                }
            }
        }
    }

    /// Apple's acceptance of Set App Account Token: its audit entry, in a transaction of its own (the token itself
    /// arrives signed, with the purchase's transaction).
    public func recordAppAccountTokenSet(projectId: UUID, environment: StoreEnvironment, originalTransactionId: String,
                                         token: UUID) throws {
        try StorageErrors.mapping("record app account token") {
            try pool.transaction { connection in
                try AuditRows.write(connection, changes: [
                    AuditChange("environment", .null, .string(environment.rawValue)),
                    AuditChange("app_account_token", .null, .string(token.lowercasedText)),
                ])
            }
        }
    }

    /// Nothing is stored about a test notification request but its audit entry, in a transaction of its own.
    public func recordTestNotificationRequest(projectId: UUID, environment: StoreEnvironment) throws {
        try StorageErrors.mapping("record test notification request") {
            try pool.transaction { connection in
                try AuditRows.write(connection, changes: [AuditChange("environment", .null, .string(environment.rawValue))])
            }
        }
    }
}
